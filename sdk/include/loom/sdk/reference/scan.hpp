// The running extremes of cummax and cummin (Note [cummax and cummin]), shared by every
// backend (host and GPU code).
//
// Note [cummax and cummin]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Element i of a line takes the line's running extreme over [0, i] and its position. As
// in PyTorch, a value equal to the running extreme takes its place (the position is the
// last of equal extremes), a NaN takes the place of anything and is kept (later NaNs move
// the position to themselves).
#pragma once

#include "loom/sdk/hd.hpp"

namespace loom::sdk {

// Whether `key` becomes the running extreme after `best` (`first`: the line's first
// element). Key is the element's compute type (NaN only in floating ones).
template <bool IsMax, typename Key>
LOOM_SDK_HD bool takes_running_extreme(bool first, Key key, Key best) {
  if (first || key != key) return true;
  if (best != best) return false;
  return IsMax ? key >= best : key <= best;
}

}  // namespace loom::sdk
