/// PLACEHOLDER: replaced by the XMTP adapter.
enum XMTPAdapterPlaceholder {}
