// corpus/: input files a probe copies into the workspace by name, kept in the evaluation folder so
// that the target reaches one only as the copy its probe asks for (docs/evaluation-format.md).
//
// The folder is read once, when the evaluation is loaded: every file's content goes into the
// files of the probes that name it, so nothing reads corpus/ while a target runs, and a file
// changed after `check` cannot differ between two trials.
#pragma once

#include <vector>

#include "evaluation/evaluation.hpp"

namespace tea::evaluation {

// Walks <folder>/corpus (absent: no corpus) and puts each file a probe names into that probe's
// files. A link, a special file, a name that is not 1 to 128 of A-Z a-z 0-9 . _ - (not starting
// with '-'), a file over 16 MiB, more than 4096 files or 64 MiB in all, and a probe's name that
// is no file of the corpus are problems; a file no probe names is a note.
void load_corpus(Evaluation &evaluation, std::vector<Problem> &problems,
                 std::vector<Problem> &notes);

}  // namespace tea::evaluation
