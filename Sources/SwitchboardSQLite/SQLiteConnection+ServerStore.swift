extension SQLiteConnection {
    /// Opens (creating) the database at `path` as the reference servers' stores want it: a 5 s busy timeout,
    /// defensive mode, WAL with `synchronous=NORMAL` and foreign keys on.
    public static func openServerStore(path: String) throws -> SQLiteConnection {
        let sqlite = try SQLiteConnection(path: path)
        try sqlite.setBusyTimeout(milliseconds: 5000)
        try sqlite.enableDefensiveMode()
        try sqlite.executeScript("PRAGMA journal_mode=WAL")
        try sqlite.executeScript("PRAGMA synchronous=NORMAL")
        try sqlite.executeScript("PRAGMA foreign_keys=ON")
        return sqlite
    }
}
