/* `rungd migrate` (migrate.c). */
#ifndef RUNG_SERVER_MIGRATE_H
#define RUNG_SERVER_MIGRATE_H

/* argv[0] is "migrate". Returns the exit status. */
int migrate_main(int argc, char **argv);

#endif
