// File modification times as a least-recently-used order: the on-disk caches (the KV tier's
// block files, the packed weight files) stamp a file when it is used and evict the oldest.
#pragma once

namespace lmrun {

// Sets the file's access and modification times to now. Explicit times: the kernel stamps
// files with its coarse clock (a tick of ms), which would tie files written in one burst and
// blur the order.
void mark_used_now(int fd);

}  // namespace lmrun
