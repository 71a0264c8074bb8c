# Turns the schema/ migrations into a C array, so rungd carries its schema
# inside the binary. Run as: cmake -DOUT=file.c -DSQL="a.sql;b.sql" -P embed_sql.cmake
set(body "/* Generated from the schema folder by cmake/embed_sql.cmake; do not edit. */\n")
string(APPEND body "#include <stddef.h>\nconst char *const rung_migrations[] = {\n")
list(SORT SQL)
foreach(f IN LISTS SQL)
  file(READ ${f} text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n\"" text "${text}")
  string(APPEND body "\"${text}\",\n")
endforeach()
string(APPEND body "NULL};\n")
file(WRITE ${OUT} "${body}")
