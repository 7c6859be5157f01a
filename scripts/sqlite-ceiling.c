/*
 * The dedupe storage ceiling without Swift: events/s that plain libsqlite3 reaches storing what reconciling a new
 * message must store (its row and its ID-map row, the store's schema and indexes), prepared statements, all events
 * in one transaction on an in-memory database. BENCHMARKS.md quotes it next to `bench dedupe`'s own ceiling figure.
 *
 *   cc -O2 scripts/sqlite-ceiling.c -lsqlite3 -o /tmp/sqlite-ceiling
 *   /tmp/sqlite-ceiling [EVENTS] [without-rowid 0|1] [lookup 0|1]     (defaults: 100000 0 0)
 *
 * `lookup 1` also reads the ID map by (backend, remote ID) first, as the engine does for every new message;
 * `without-rowid 1` declares both tables WITHOUT ROWID (not the store's schema; an experiment).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void run(sqlite3 *db, const char *sql) {
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) {
        fprintf(stderr, "sqlite: %s\n", error);
        exit(1);
    }
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, NULL) != SQLITE_OK) {
        fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
        exit(1);
    }
    return statement;
}

static void step(sqlite3 *db, sqlite3_stmt *statement) {
    int rc = sqlite3_step(statement);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
        exit(1);
    }
    sqlite3_reset(statement);
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 100000;
    int withoutRowid = argc > 2 ? atoi(argv[2]) : 0;
    int lookup = argc > 3 ? atoi(argv[3]) : 0;
    if (count <= 0) {
        fprintf(stderr, "usage: %s [EVENTS] [without-rowid 0|1] [lookup 0|1]\n", argv[0]);
        return 2;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
    char schema[2048];
    snprintf(schema, sizeof schema,
             "CREATE TABLE messages (id TEXT PRIMARY KEY NOT NULL, conversation TEXT NOT NULL, sender TEXT NOT NULL,"
             " text TEXT NOT NULL, reply_to TEXT, metadata TEXT NOT NULL DEFAULT '{}', ts INTEGER NOT NULL,"
             " has_server_ts INTEGER NOT NULL, edited_at INTEGER, deleted_at INTEGER, delivery TEXT NOT NULL,"
             " delivery_progress REAL, failure_reason TEXT, failure_retryable INTEGER, is_outgoing INTEGER NOT NULL)"
             " STRICT%s;"
             "CREATE INDEX messages_timeline ON messages (conversation, ts, id);"
             "CREATE TABLE id_map (message_id TEXT NOT NULL, backend TEXT NOT NULL, conversation TEXT NOT NULL,"
             " remote_id TEXT NOT NULL, part INTEGER NOT NULL DEFAULT 0, %s (backend, remote_id),"
             " UNIQUE (message_id, backend, part)) STRICT%s;",
             withoutRowid ? ", WITHOUT ROWID" : "", withoutRowid ? "PRIMARY KEY" : "UNIQUE",
             withoutRowid ? ", WITHOUT ROWID" : "");
    run(db, schema);
    char (*ids)[40] = malloc((size_t)count * 40);
    srand(7);
    for (int i = 0; i < count; i++) {
        snprintf(ids[i], 40, "%08x-%04x-%04x-%04x-%08x%04x", rand(), rand() & 0xffff, (rand() & 0x0fff) | 0x5000,
                 (rand() & 0x3fff) | 0x8000, rand(), rand() & 0xffff);
    }
    sqlite3_stmt *insertMessage = prepare(db,
        "INSERT OR IGNORE INTO messages (id, conversation, sender, text, metadata, ts, has_server_ts, delivery, is_outgoing)"
        " VALUES (?, 'bench-dedupe', 'bob', ?, '{}', ?, 1, 'received', 0)");
    sqlite3_stmt *insertMapping = prepare(db,
        "INSERT OR IGNORE INTO id_map (message_id, backend, conversation, remote_id, part)"
        " VALUES (?, 'memory', 'bench-dedupe', ?, 0)");
    sqlite3_stmt *select = prepare(db, "SELECT message_id FROM id_map WHERE backend = 'memory' AND remote_id = ? AND part = 0");
    char text[64], remote[64];
    double started = now();
    run(db, "BEGIN");
    for (int i = 0; i < count; i++) {
        snprintf(remote, sizeof remote, "remote-%d", i);
        snprintf(text, sizeof text, "incoming message %d", i);
        if (lookup) {
            sqlite3_bind_text(select, 1, remote, -1, SQLITE_TRANSIENT);
            step(db, select);
        }
        sqlite3_bind_text(insertMapping, 1, ids[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(insertMapping, 2, remote, -1, SQLITE_TRANSIENT);
        step(db, insertMapping);
        sqlite3_bind_text(insertMessage, 1, ids[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(insertMessage, 2, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(insertMessage, 3, 1800000000000000LL + (long long)i * 1000);
        step(db, insertMessage);
    }
    run(db, "COMMIT");
    double seconds = now() - started;
    printf("%d events, without-rowid %d, lookup %d: %.0f events/s (%.2f us/event), SQLite %s\n", count, withoutRowid,
           lookup, count / seconds, seconds * 1e6 / count, sqlite3_libversion());
    sqlite3_finalize(insertMessage);
    sqlite3_finalize(insertMapping);
    sqlite3_finalize(select);
    sqlite3_close(db);
    free(ids);
    return 0;
}
