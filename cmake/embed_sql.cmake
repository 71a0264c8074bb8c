# Turns the schema/ migrations into C arrays, so rungd carries its schema
# inside the binary. Run as: cmake -DOUT=file.c -DSQL="a.sql;b.sql" -P embed_sql.cmake
# rung_migrations[] holds each file; rung_migrations_pg[] the file of the
# same name in schema/pg/ where there is one (a migration whose SQLite SQL
# PostgreSQL cannot run even once translated: server/db_dialect.h), else NULL.
function(c_string out file)
  file(READ ${file} text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n\"\n\"" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

set(body "/* Generated from the schema folder by cmake/embed_sql.cmake; do not edit. */\n")
string(APPEND body "#include <stddef.h>\nconst char *const rung_migrations[] = {\n")
list(SORT SQL)
set(pg "const char *const rung_migrations_pg[] = {\n")
foreach(f IN LISTS SQL)
  c_string(text ${f})
  string(APPEND body "${text},\n")
  get_filename_component(dir ${f} DIRECTORY)
  get_filename_component(name ${f} NAME)
  if(EXISTS ${dir}/pg/${name})
    c_string(text ${dir}/pg/${name})
    string(APPEND pg "${text},\n")
  else()
    string(APPEND pg "NULL,\n")
  endif()
endforeach()
string(APPEND body "NULL};\n${pg}NULL};\n")
file(WRITE ${OUT} "${body}")
