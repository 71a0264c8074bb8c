# ctest's train_help (cmake -P): `rung-train --help` lists exactly the config
# keys that docs/trainer.md's table "The config" documents, so the program's
# table of fields (kernels/train_main.c, FIELDS) and the document cannot drift
# apart. -DTRAIN=<rung-train> -DDOC=<docs/trainer.md>.
cmake_minimum_required(VERSION 3.18) # IN_LIST, list(TRANSFORM)
execute_process(COMMAND ${TRAIN} --help RESULT_VARIABLE rc OUTPUT_VARIABLE help
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rung-train --help exited with ${rc}: ${err}")
endif()

# The keys of the help: the first word of each config line ("  lr   a number ...")
# after the line that starts the config's part.
string(FIND "${help}" "\nThe config:" at)
if(at EQUAL -1)
  message(FATAL_ERROR "rung-train --help has no part about the config:\n${help}")
endif()
string(SUBSTRING "${help}" ${at} -1 config_help)
string(REGEX MATCHALL "\n  [a-z_0-9]+ " help_keys "${config_help}")
list(TRANSFORM help_keys STRIP)

# The keys of the document: every `key` in the first column of the first
# table under "## The config" (a row may name several: `momentum`, `nesterov`).
file(READ ${DOC} doc)
string(FIND "${doc}" "\n## The config" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} has no section \"The config\"")
endif()
string(SUBSTRING "${doc}" ${at} -1 doc)
string(FIND "${doc}" "\n| " at)
string(SUBSTRING "${doc}" ${at} -1 doc)
string(FIND "${doc}" "\n\n" end) # the table ends at the first blank line
string(SUBSTRING "${doc}" 0 ${end} doc)
string(REGEX MATCHALL "\n\\| [^|]+\\|" first_cells "${doc}")
set(doc_keys "")
foreach(cell IN LISTS first_cells)
  string(REGEX MATCHALL "`[a-z_0-9]+`" names "${cell}")
  foreach(name IN LISTS names)
    string(REPLACE "`" "" name "${name}")
    list(APPEND doc_keys ${name})
  endforeach()
endforeach()
list(REMOVE_DUPLICATES doc_keys)

if(NOT help_keys)
  message(FATAL_ERROR "no config keys found in rung-train --help:\n${help}")
endif()
set(missing "")
foreach(key IN LISTS doc_keys)
  if(NOT key IN_LIST help_keys)
    list(APPEND missing "${key} (in docs/trainer.md, not in --help)")
  endif()
endforeach()
foreach(key IN LISTS help_keys)
  if(NOT key IN_LIST doc_keys)
    list(APPEND missing "${key} (in --help, not in docs/trainer.md)")
  endif()
endforeach()
if(missing)
  string(REPLACE ";" "\n  " missing "${missing}")
  message(FATAL_ERROR "rung-train --help and docs/trainer.md disagree:\n  ${missing}")
endif()
list(LENGTH help_keys n)
message(STATUS "rung-train --help lists the ${n} config keys of docs/trainer.md")
