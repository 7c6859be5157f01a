#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/// Typed wrapper for the variadic sqlite3_db_config(SQLITE_DBCONFIG_DEFENSIVE, on, NULL).
static inline int csqlite_set_defensive(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, (int *)0);
}
/// Typed wrapper for the variadic sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0): no memory statistics, so SQLite's
/// allocations no longer take its process-wide memory mutex. Only valid before SQLite initialises.
static inline int csqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
