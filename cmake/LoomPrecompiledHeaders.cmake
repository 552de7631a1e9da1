# Precompiled headers for the libraries with many translation units.
#
# Note [Precompiled headers of the libraries]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A translation unit of the core libraries spends most of its compile time parsing the same
# headers: about 100,000 preprocessed lines of the C++ standard library (GCC 12's <memory>
# alone is 52,000 in C++20), Abseil's StrCat behind loom/core/error.h and the typed op API.
# ops/decompositions/pool.cc took 6.9 s, 4.7 s of it parsing (-fsyntax-only), and the op
# library has 74 such files. Each library below precompiles the headers most of its files
# include, once per target and with the target's own flags (GCC uses a precompiled header
# only when the flags match, and says so under -Winvalid-pch); the tests share theirs
# (Note [The tests' precompiled header]). The headers are force-included, so a file of
# these targets compiles even when it forgets one of them: the build without precompiled
# headers (-DLOOM_PRECOMPILED_HEADERS=OFF) is the check for that.
option(LOOM_PRECOMPILED_HEADERS "Precompile the common headers of the larger libraries" ON)

# loom_precompile_headers(TARGET HEADER...): HEADER as target_precompile_headers takes it
# (<system> or [["loom/..."]], found through the target's include path).
function(loom_precompile_headers target)
  if(NOT LOOM_PRECOMPILED_HEADERS OR NOT TARGET ${target})
    return()
  endif()
  target_precompile_headers(${target} PRIVATE ${ARGN})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-Winvalid-pch>)
endfunction()
