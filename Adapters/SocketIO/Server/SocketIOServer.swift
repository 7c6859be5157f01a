/// Placeholder until the Socket.IO reference server lands.
enum SocketIOServerPlaceholder {}
