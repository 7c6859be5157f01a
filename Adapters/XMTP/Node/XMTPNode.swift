/// PLACEHOLDER: replaced by the node implementation.
enum XMTPNodePlaceholder {}
