# tea-shipped: every target an installation ships (the runtime, its helpers and modules, the
# plugins) and nothing else, so scripts/run-example.sh builds what the example runs and not the
# test suite. Each target is added where it is installed, with tea_shipped(TARGET...).
add_custom_target(tea-shipped)
function(tea_shipped)
  add_dependencies(tea-shipped ${ARGN})
endfunction()
