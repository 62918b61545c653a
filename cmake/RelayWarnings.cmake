# relay_project_target(<target>): warnings as errors and the chosen sanitizers, for the project's
# own targets only (never for consumers of the installed package).
set(RELAY_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
                   -Wcast-align -Woverloaded-virtual -Wnull-dereference -Wformat=2 -Werror)

function(relay_project_target target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${RELAY_WARNINGS}>)
  if(RELAY_SANITIZE)
    list(JOIN RELAY_SANITIZE "," sanitizers)
    target_compile_options(${target} PRIVATE -fsanitize=${sanitizers} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${sanitizers})
  endif()
endfunction()
