// The .pt2 reader over any source of archive entries (a zip file, or entries in memory
// for the reader's fuzzer): Note [Reading a .pt2 archive] in loom/exported_program.h.
#pragma once

#include "loom/exported_program.h"
#include "zip_archive.h"

namespace loom {

ExportedProgram read_exported_program(const graph::ArchiveEntries& archive);

}  // namespace loom
