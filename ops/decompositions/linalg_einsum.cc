// The linalg family's einsum, as a decomposition (its own file for its size): the equation parsed
// into one label per dim, repeated labels of an operand taken as diagonals, labels no one else
// needs summed out, then the operands contracted left to right, each pair as one batched matmul
// (Note [einsum]).
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

constexpr const char* kOp = "loom::einsum";
constexpr int kLetters = 52;  // A-Z are 0..25, a-z 26..51; ellipsis dims count from 52

// Note [einsum]
// ~~~~~~~~~~~~~
// Each dim of each operand gets a label: a letter (A-Z, a-z) or one of the dims "..."
// stands for (right-aligned across operands, so they broadcast). Without "->" the output
// is the ellipsis dims, then the letters used once, in label order (upper case first, as
// PyTorch). A pair contracts as bmm([batch, left, contracted] x [batch, contracted,
// right]): batch labels are in both operands and still needed (by the output or a later
// operand), contracted labels in both and no longer needed, left and right labels in one
// of them. So `bij,bjk->bik` is one bmm, with no [b, i, j, k] intermediate. Size-1 dims
// broadcast: a batch label is expanded, a contracted one summed on the other side first.

struct Term {
  Tensor tensor;
  std::vector<int> labels;  // one per dim
};

int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

std::string label_name(int label) {
  if (label < 26) return std::string(1, static_cast<char>('A' + label));
  if (label < kLetters) return std::string(1, static_cast<char>('a' + label - 26));
  return "...";
}

// The letters of one subscript string and where its "..." stands (-1: none).
struct Subscripts {
  std::vector<int> letters;
  int ellipsis_at = -1;
};

Subscripts parse_subscripts(std::string_view text, std::string_view equation) {
  Subscripts s;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ' ') continue;
    if (text.substr(i, 3) == "...") {
      if (s.ellipsis_at >= 0)
        fail(kOp, "expected at most one '...' per operand in '", equation, "'");
      s.ellipsis_at = static_cast<int>(s.letters.size());
      i += 2;
      continue;
    }
    const int label = letter_label(text[i]);
    if (label < 0) {
      fail(kOp, "expected subscripts in [a-zA-Z] or '...' in '", equation, "', found '",
           std::string(1, text[i]), "'");
    }
    s.letters.push_back(label);
  }
  return s;
}

// Takes the diagonal of every label an operand repeats (`ii`), until labels are unique.
void take_diagonals(Term& term, int index) {
  for (size_t a = 0; a < term.labels.size(); ++a) {
    for (size_t b = a + 1; b < term.labels.size(); ++b) {
      if (term.labels[a] != term.labels[b]) continue;
      const int64_t na = term.tensor.sizes()[a], nb = term.tensor.sizes()[b];
      if (na != nb) {
        fail(kOp, "subscript ", label_name(term.labels[a]), " is repeated for operand ", index,
             " but its sizes differ: ", na, " and ", nb);
      }
      term.tensor = term.tensor.diagonal(0, static_cast<int64_t>(a), static_cast<int64_t>(b));
      const int label = term.labels[a];
      term.labels.erase(term.labels.begin() + static_cast<std::ptrdiff_t>(b));
      term.labels.erase(term.labels.begin() + static_cast<std::ptrdiff_t>(a));
      term.labels.push_back(label);  // diagonal() puts the diagonal last
      take_diagonals(term, index);
      return;
    }
  }
}

// Sums `term` over the labels `needed` says no one needs any more.
void sum_unneeded(Term& term, const std::array<bool, 128>& needed) {
  std::vector<int64_t> dims;
  std::vector<int> kept;
  for (size_t d = 0; d < term.labels.size(); ++d) {
    if (needed[term.labels[d]]) {
      kept.push_back(term.labels[d]);
    } else {
      dims.push_back(static_cast<int64_t>(d));
    }
  }
  if (dims.empty()) return;
  term.tensor = loom::sum(term.tensor, dims, false);
  term.labels = kept;
}

int64_t size_of(const Term& t, int label) {
  for (size_t d = 0; d < t.labels.size(); ++d) {
    if (t.labels[d] == label) return t.tensor.sizes()[d];
  }
  return -1;
}

std::vector<int64_t> positions(const Term& t, const std::vector<int>& labels) {
  std::vector<int64_t> out;
  for (int l : labels) {
    out.push_back(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin());
  }
  return out;
}

// Contracts a and b over the labels `keep` does not hold, as one bmm.
Term contract(Term a, Term b, const std::array<bool, 128>& keep) {
  const ScalarType dtype = promote_types(a.tensor.dtype(), b.tensor.dtype());
  a.tensor = cast(a.tensor, dtype);
  b.tensor = cast(b.tensor, dtype);
  std::vector<int> batch, left, right, contracted;
  for (int l : a.labels) {
    const bool in_b = std::find(b.labels.begin(), b.labels.end(), l) != b.labels.end();
    (in_b ? (keep[l] ? batch : contracted) : left).push_back(l);
  }
  for (int l : b.labels) {
    if (std::find(a.labels.begin(), a.labels.end(), l) == a.labels.end()) right.push_back(l);
  }
  // Broadcast size-1 dims of shared labels.
  for (int l : contracted) {
    const int64_t na = size_of(a, l), nb = size_of(b, l);
    if (na == nb) continue;
    if (na != 1 && nb != 1) {
      fail(kOp, "operands do not broadcast: subscript ", label_name(l), " has sizes ", na, " and ",
           nb);
    }
    Term& wide = na == 1 ? b : a;
    const int64_t d = positions(wide, {l})[0];
    wide.tensor = loom::sum(wide.tensor, IntList{d}, true);
  }
  std::vector<int64_t> batch_sizes;
  for (int l : batch) {
    const int64_t na = size_of(a, l), nb = size_of(b, l);
    if (na != nb && na != 1 && nb != 1) {
      fail(kOp, "operands do not broadcast: subscript ", label_name(l), " has sizes ", na, " and ",
           nb);
    }
    batch_sizes.push_back(std::max(na, nb));
  }
  auto arrange = [&](Term& t, const std::vector<int>& first, const std::vector<int>& second,
                     const std::vector<int>& third) {
    std::vector<int> order = first;
    order.insert(order.end(), second.begin(), second.end());
    order.insert(order.end(), third.begin(), third.end());
    Tensor p = t.tensor.permute(positions(t, order));
    std::vector<int64_t> expanded(p.sizes().begin(), p.sizes().end());
    for (size_t i = 0; i < first.size(); ++i) expanded[i] = batch_sizes[i];
    return p.expand(expanded);
  };
  auto product = [&](const Term& t, const std::vector<int>& labels) {
    int64_t n = 1;
    for (int l : labels) n *= size_of(t, l);
    return n;
  };
  int64_t nbatch = 1;
  for (int64_t s : batch_sizes) nbatch *= s;
  const int64_t nl = product(a, left), nr = product(b, right);
  const int64_t nc = contracted.empty() ? 1 : product(a, contracted);
  Tensor lhs = loom::reshape(arrange(a, batch, left, contracted), {nbatch, nl, nc});
  Tensor rhs = loom::reshape(arrange(b, batch, contracted, right), {nbatch, nc, nr});
  std::vector<int64_t> shape = batch_sizes;
  for (int l : left) shape.push_back(size_of(a, l));
  for (int l : right) shape.push_back(size_of(b, l));
  Term out;
  out.tensor = loom::reshape(loom::bmm(lhs, rhs), shape);
  out.labels = batch;
  out.labels.insert(out.labels.end(), left.begin(), left.end());
  out.labels.insert(out.labels.end(), right.begin(), right.end());
  return out;
}

Tensor einsum(std::string_view equation, const std::vector<Tensor>& tensors,
              const std::optional<IntList>& path) {
  if (tensors.empty()) fail(kOp, "expected at least one operand, found none");
  const size_t arrow = equation.find("->");
  const std::string_view lhs = equation.substr(0, arrow);
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    parts.push_back(lhs.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (parts.size() != tensors.size()) {
    fail(kOp, "expected ", parts.size(), " operands for '", equation, "', found ", tensors.size(),
         " tensors");
  }
  std::vector<Subscripts> subs;
  int max_ellipsis = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    subs.push_back(parse_subscripts(parts[k], equation));
    const auto letters = static_cast<int64_t>(subs[k].letters.size());
    const int64_t dims = tensors[k].dim();
    if (subs[k].ellipsis_at < 0 ? dims != letters : dims < letters) {
      fail(kOp, "operand ", k, " has ", dims, " dims but '", parts[k], "' gives ",
           subs[k].ellipsis_at < 0 ? "" : "at most ", letters);
    }
    if (subs[k].ellipsis_at >= 0)
      max_ellipsis = std::max(max_ellipsis, static_cast<int>(dims - letters));
  }
  if (kLetters + max_ellipsis > 128) fail(kOp, "expected at most ", 128 - kLetters, " '...' dims");
  std::vector<Term> terms;
  std::array<int, 128> uses{};
  for (size_t k = 0; k < subs.size(); ++k) {
    Term t{tensors[k], {}};
    const int ellipsis_dims =
        static_cast<int>(tensors[k].dim()) - static_cast<int>(subs[k].letters.size());
    for (size_t i = 0; i <= subs[k].letters.size(); ++i) {
      if (static_cast<int>(i) == subs[k].ellipsis_at) {
        for (int e = 0; e < ellipsis_dims; ++e)
          t.labels.push_back(kLetters + max_ellipsis - ellipsis_dims + e);
      }
      if (i < subs[k].letters.size()) t.labels.push_back(subs[k].letters[i]);
    }
    for (int l : t.labels) ++uses[l];
    terms.push_back(std::move(t));
  }
  // The output's labels.
  std::vector<int> output;
  if (arrow != std::string_view::npos) {
    const Subscripts out = parse_subscripts(equation.substr(arrow + 2), equation);
    for (size_t i = 0; i <= out.letters.size(); ++i) {
      if (static_cast<int>(i) == out.ellipsis_at) {
        for (int e = 0; e < max_ellipsis; ++e) output.push_back(kLetters + e);
      }
      if (i < out.letters.size()) output.push_back(out.letters[i]);
    }
    for (size_t i = 0; i < output.size(); ++i) {
      if (output[i] < kLetters && uses[output[i]] == 0) {
        fail(kOp, "output subscript ", label_name(output[i]), " does not appear in any operand");
      }
      if (std::count(output.begin(), output.end(), output[i]) > 1) {
        fail(kOp, "output subscript ", label_name(output[i]), " appears more than once");
      }
    }
  } else {
    for (int e = 0; e < max_ellipsis; ++e) output.push_back(kLetters + e);
    for (int l = 0; l < kLetters; ++l) {
      if (uses[l] == 1) output.push_back(l);
    }
  }
  if (path && path->size() > 0 && path->size() != 2 * (tensors.size() - 1)) {
    fail(kOp, "expected a path of ", 2 * (tensors.size() - 1), " indices, found ", path->size());
  }
  // Diagonals, then what each operand alone can sum out, then contract left to right.
  std::array<bool, 128> in_output{};
  for (int l : output) in_output[l] = true;
  for (size_t k = 0; k < terms.size(); ++k) take_diagonals(terms[k], static_cast<int>(k));
  auto needed_after = [&](size_t k) {  // by the output or an operand after k
    std::array<bool, 128> needed = in_output;
    for (size_t j = k + 1; j < terms.size(); ++j) {
      for (int l : terms[j].labels) needed[l] = true;
    }
    return needed;
  };
  for (size_t k = 0; k < terms.size(); ++k) {
    std::array<bool, 128> needed = in_output;
    for (size_t j = 0; j < terms.size(); ++j) {
      if (j == k) continue;
      for (int l : terms[j].labels) needed[l] = true;
    }
    sum_unneeded(terms[k], needed);
  }
  Term result = terms[0];
  for (size_t k = 1; k < terms.size(); ++k) {
    result = contract(result, terms[k], needed_after(k));
  }
  sum_unneeded(result, in_output);
  return loom::contiguous(result.tensor.permute(positions(result, output)));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::einsum", decomposition<&einsum>()},
};

}  // namespace

std::span<const DecompositionEntry> linalg_einsum_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
