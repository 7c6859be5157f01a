/// PLACEHOLDER: replaced by the PostgreSQL store.
enum PostgresStorePlaceholder {}
