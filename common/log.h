/* Leveled logging to stderr. Only programs log: library code returns errors
 * and the caller that handles one logs it once. The level comes from
 * RUNG_LOG (debug|info|warn|error; default info). */
#ifndef RUNG_COMMON_LOG_H
#define RUNG_COMMON_LOG_H

typedef enum { RUNG_LOG_DEBUG, RUNG_LOG_INFO, RUNG_LOG_WARN, RUNG_LOG_ERROR } RungLogLevel;

void rung_log(RungLogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_DEBUG(...) rung_log(RUNG_LOG_DEBUG, __VA_ARGS__)
#define LOG_INFO(...) rung_log(RUNG_LOG_INFO, __VA_ARGS__)
#define LOG_WARN(...) rung_log(RUNG_LOG_WARN, __VA_ARGS__)
#define LOG_ERROR(...) rung_log(RUNG_LOG_ERROR, __VA_ARGS__)

#endif
