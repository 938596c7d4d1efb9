// Atomic file replacement and whole-file reading: the one place every output
// of autohaap (plans, reports, caches, checkpoints) goes through, so a kill,
// a requeue or a full disk never leaves a half-written file where a reader or
// a resumed job would trust it (DESIGN.md "batch": idempotent, atomic writes).
//
// write_file_atomically writes a temporary file next to the target, syncs
// it, renames it over the target and syncs the directory: a reader sees
// either the old file or the new one, never a mix. Both functions report
// failure as InputError naming the path and the operating system's reason,
// which the CLI turns into exit code 2. Safe to call from several threads,
// also on the same path (the last rename wins). Cost: one pass over the
// contents plus two fsyncs.
#pragma once

#include <string>
#include <string_view>

namespace autohaap {

// Replaces `path` with `contents`. The directory must exist (it is not
// created: a mistyped output directory should be an error, not a new tree).
// An existing file keeps its permission bits; a new one gets 0666 minus the
// umask. A symbolic link at `path` is replaced by the file, not followed.
void write_file_atomically(const std::string& path, std::string_view contents);

// Throws the InputError write_file_atomically would throw for a file
// `path` that cannot be written (its folder missing or read-only, `path` a
// folder), without touching `path`: for outputs written only after long
// work, so that a mistyped -o costs nothing. Creates and removes a
// temporary file in the folder, as a write would.
void check_writable(const std::string& path);

// Removes the temporaries a killed writer left beside `path`
// (".<name>.tmp.<pid>.<n>", as write_file_atomically names them) that
// nothing has written to for `idle_seconds`: a live write renames its
// temporary as soon as it is synced, so one idle that long is abandoned
// (a search killed with SIGKILL while saving a checkpoint left one of tens
// of MB per kill). Returns how many were removed; what cannot be listed or
// removed is left as it is.
int remove_abandoned_temporaries(const std::string& path, double idle_seconds = 600);

// The extension of a file name in lower case (".json", ".yaml", or "" when
// it has none): what an output's format is chosen and checked by.
std::string lowercase_extension(const std::string& path);

// The whole contents of a regular file; InputError if it is missing, a
// directory or unreadable.
std::string read_file(const std::string& path);

}  // namespace autohaap
