#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>
#include <spawn.h>

/* Diagnostic field codes are character-literal macros; expose them as functions. */
static inline int clibpq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int clibpq_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int clibpq_diag_message_detail(void) { return PG_DIAG_MESSAGE_DETAIL; }
static inline int clibpq_diag_message_hint(void) { return PG_DIAG_MESSAGE_HINT; }

/* The private cluster's spawn closes every inherited descriptor above 2 with this GNU extension (glibc 2.34),
   which Swift's Glibc module leaves out because it is built without _GNU_SOURCE. */
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
#endif
