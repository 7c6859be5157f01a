/// PLACEHOLDER: replaced by the XMTP harness.
enum XMTPHarnessPlaceholder {}
