/* The version of this build, "0.1.0+git285.g07b8a54": the project's version
 * and the git commit it was built from (cmake/version.cmake writes it at
 * build time). Every program prints it for --version, and rungd's /metrics
 * has it as rung_build_info's label. */
#ifndef RUNG_COMMON_VERSION_H
#define RUNG_COMMON_VERSION_H

extern const char rung_version[];

#endif
