/* Numbers as text, fast and exactly as printf writes them. trials.csv
 * (docs/api.md) writes every real with "%.17g" (round-trip exact) and a
 * large experiment has hundreds of thousands of them: glibc's printf of a
 * double works in multiple precision and took a quarter of the request's
 * time. These write the same bytes for every input; the common cases take
 * a few integer multiplications, the rest is handed to snprintf. */
#ifndef RUNG_COMMON_FMTNUM_H
#define RUNG_COMMON_FMTNUM_H

#include <stddef.h>
#include <stdint.h>

/* Room for any output of the functions below, with the NUL. */
#define RUNG_FMTNUM_MAX 32

/* Writes v as snprintf(buf, RUNG_FMTNUM_MAX, "%.17g", v) does in the C
 * locale (round to nearest, ties to even; "inf", "nan" and their signs
 * included) and returns the length. */
size_t rung_fmt_g17(char *buf, double v);

/* Writes v in the fewest significant digits (15, 16 or 17) that read back
 * to the same double with strtod ("0.1", not "0.10000000000000001"), as
 * %g does, and returns the length. Slower than rung_fmt_g17 (snprintf). */
size_t rung_fmt_shortest(char *buf, double v);

/* Writes v as "%lld" does and returns the length. */
size_t rung_fmt_i64(char *buf, int64_t v);

#endif
