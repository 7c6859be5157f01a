#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/// Typed wrapper for the variadic sqlite3_db_config(SQLITE_DBCONFIG_DEFENSIVE, on, NULL).
static inline int csqlite_set_defensive(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, (int *)0);
}
#endif
