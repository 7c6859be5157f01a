#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>

/* Diagnostic field codes are character-literal macros; expose them as functions. */
static inline int clibpq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int clibpq_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int clibpq_diag_message_detail(void) { return PG_DIAG_MESSAGE_DETAIL; }
static inline int clibpq_diag_message_hint(void) { return PG_DIAG_MESSAGE_HINT; }
#endif
