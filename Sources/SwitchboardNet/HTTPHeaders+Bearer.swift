extension HTTPHeaders {
    /// Replaces any `Authorization` header with `Bearer <token>`.
    public mutating func setBearer(_ token: String) {
        remove("Authorization")
        add("Authorization", "Bearer \(token)")
    }
}
