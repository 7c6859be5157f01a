/// PLACEHOLDER: replaced by the crypto implementation.
enum XMTPCryptoPlaceholder {}
