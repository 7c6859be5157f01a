/// Placeholder until the Engine.IO v4 codec lands.
enum EngineIOPlaceholder {}
