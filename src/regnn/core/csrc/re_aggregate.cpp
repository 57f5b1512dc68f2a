// Fused CPU kernels for RE-GNN's weighted GCN aggregation (regnn/core/kernels.py, regnn/core/adjacency.py).
//
// forward:  out[v] = a[v] * sum over in-edges e = (u -> v) of alpha[rel[e]] * b[u] * h[u]
// backward: gh[u] = sum over out-edges of alpha[rel[e]] a[v] b[u] G[v], and the gradient of alpha (direct and
//   through the weighted degrees that a and b come from) without forming the per-edge products <G[v], h[u]>.
// scales:   a, b and their derivative factors from the weighted degrees.
// heads_*:  GAT's multi-head aggregation by attention coefficients, and its gradients.
// v2_scores*: GATv2's attention logits a . LeakyReLU(zs[u] + zd[v]) per edge and head, and their gradients.
// gat_softmax*: GAT's attention (edge logits, LeakyReLU, softmax over in-edges) in one pass, and its gradients.
// edge_softmax*, segment_sum: the attention layers' softmax over in-edges and sums of per-edge rows by node.
// hash_dropout: dropout whose mask is recomputed from a seed instead of stored.
// Float and double; the widths 2, 3, 4, 8, 16, 32, 64 are compiled as constants. Per-thread partial sums are added up in a fixed
// order, so results depend on the thread count only.
#include <torch/extension.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

// Runs body(row_begin, row_end) over [0, n) in pieces of about equal work (not rows: degrees vary by orders of
// magnitude between node types), a few pieces per thread; pieces go to threads in fixed order, so the result
// depends on the thread count only. A row's work is its edges, plus `row_cost` edges' worth for each of the first
// `costed_rows` rows (work done once per row: the backward's degree terms).
template <typename Body>
void parallel_rows(const int64_t* indptr, int64_t n, Body&& body, int64_t costed_rows = 0, int64_t row_cost = 0) {
  auto work = [&](int64_t i) -> int64_t { return indptr[i] + row_cost * std::min(i, costed_rows); };
  const int64_t total = work(n);
  const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(n, int64_t(at::get_num_threads()) * 4));
  auto start = [&](int64_t c) -> int64_t {
    if (c <= 0) return 0;
    if (c >= pieces) return n;
    const int64_t target = c * total / pieces;
    int64_t lo = 0, hi = n;  // the first row whose work before it reaches the target (work is non-decreasing)
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (work(mid) < target) lo = mid + 1; else hi = mid;
    }
    return lo;
  };
  at::parallel_for(0, pieces, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) body(start(c), start(c + 1));
  });
}

// Rows gathered by edge (h[u] in the forward, G[v] in the backward) are read from wherever the graph points: no
// hardware prefetcher can guess the next one, and on the small full-batch graphs each row is one L2/L3 miss.
// The row of the edge kPrefetch edges ahead is asked for now, so that its lines arrive while this one is added.
constexpr int64_t kPrefetch = 8;

template <typename scalar_t>
inline void prefetch_row(const scalar_t* row, int64_t F) {
#if defined(__GNUC__) || defined(__clang__)
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t off = 0; off < F * int64_t(sizeof(scalar_t)); off += 64) __builtin_prefetch(p + off, 0, 3);
#else
  (void)row;
  (void)F;
#endif
}

template <typename scalar_t, int FW>
void forward_impl(const int64_t* indptr, const int64_t* indices, const int32_t* rel, const scalar_t* alpha,
                  const scalar_t* a, const scalar_t* b, const scalar_t* h, scalar_t* out, int64_t num_dst,
                  int64_t F_) {
  const int64_t F = FW ? FW : F_;  // a compile-time width lets the compiler unroll and vectorise the row loops
  const int64_t E = indptr[num_dst];
  parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
    std::vector<scalar_t> acc_buf(F);
    scalar_t* __restrict__ acc = acc_buf.data();
    for (int64_t v = begin; v < end; ++v) {
      for (int64_t f = 0; f < F; ++f) acc[f] = 0;
      for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
        if (e + kPrefetch < E) prefetch_row(h + indices[e + kPrefetch] * F, F);
        const int64_t u = indices[e];
        const scalar_t w = alpha[rel[e]] * b[u];
        const scalar_t* __restrict__ hu = h + u * F;
#pragma omp simd
        for (int64_t f = 0; f < F; ++f) acc[f] += w * hu[f];
      }
      const scalar_t av = a[v];
      scalar_t* __restrict__ o = out + v * F;
#pragma omp simd
      for (int64_t f = 0; f < F; ++f) o[f] = av * acc[f];
    }
  });
}

// Gradients, by sources u (CSC order). Over a run of u's out-edges of one relation r, q = sum a[v] G[v] (one
// multiply-add per feature and edge, as the plain transposed product); at the end of the run
//   gh[u] += alpha[r] b[u] q,   rel_sum[r] += b[u] <h[u], q>
// and at the end of the source out_sum = <h[u], gh[u]>. (rel_sum[r] = sum over r's edges of a[v] b[u]
// <G[v], h[u]>; out_sum = the same weighted by alpha, over u's out-edges.) The edges of a source come sorted
// by destination, and destinations of one type are one block, so a run usually holds all of a relation's edges:
// one dot per (source, relation) instead of one per edge (runs of one or two edges go edge by edge, which is
// cheaper for them).
// The gradient through the weighted degrees is added in the same pass: sources start with the destinations
// (full graph or DGL block), so at source u < num_dst, with G[u] just read for u's self-loop,
//   rel_deg[r] += counts[u, r] * gdeg[u],   gdeg[u] = ka[u] <G[u], out[u]> (+ kb[u] out_sum when sources are
// scaled too)   (ka = (da/ddeg) / a, kb = (db/ddeg) / b)
// which a separate pass over the destinations would read G and out for again.
// active (or nullptr: every source): the sources with an out-edge to a destination where G may be nonzero;
// every other source's sums are of zeros, so it gets gh = 0 and adds nothing, without reading its edges
// (each sum over the rest is the one with those zeros, and the pieces are the same: the same numbers).
template <typename scalar_t, int FW>
void backward_impl(const int64_t* t_indptr, const int64_t* t_indices, const int32_t* t_rel, const scalar_t* alpha,
                   const scalar_t* a, const scalar_t* b, const scalar_t* G, const scalar_t* h, scalar_t* gh,
                   const scalar_t* out, const scalar_t* counts, const scalar_t* ka, const scalar_t* kb,
                   double* rel_part, int64_t num_src, int64_t num_dst, int64_t R, int64_t F_, bool need_h,
                   bool need_alpha, bool has_a, bool has_b, int64_t slots, const uint8_t* active) {
  const int64_t F = FW ? FW : F_;
  const int64_t E = t_indptr[num_src];
  auto prefetch_ahead = [&](int64_t e) {  // G's row for the edge kPrefetch ahead of e
    if (e + kPrefetch < E) prefetch_row(G + t_indices[e + kPrefetch] * F, F);
  };
  // a destination's degree terms (two dot products and a pass over its relation counts) cost about as much as
  // four edges: counted, so that the threads get equal work where node types differ in degree (ACM: 13% faster)
  const int64_t costed = need_alpha && (has_a || has_b) ? num_dst : 0;
  parallel_rows(t_indptr, num_src, [&](int64_t begin, int64_t end) {
    const int64_t tid = at::get_thread_num();
    TORCH_CHECK(tid < slots, "re_aggregate: thread ", tid, " beyond the ", slots, " partial-sum rows");
    // sums of this piece in a buffer of its own, added to the thread's rows of rel_part at its end: rows
    // written per source would share cache lines between the threads
    std::vector<double> rel_buf(need_alpha ? 2 * R : 0, 0.0);
    double* rel_acc = need_alpha ? rel_buf.data() : nullptr;
    double* deg_acc = need_alpha ? rel_acc + R : nullptr;  // the degree part, added up apart
    std::vector<scalar_t> q_buf(F), g_buf(F);
    scalar_t* __restrict__ q = q_buf.data();
    scalar_t* __restrict__ g = g_buf.data();
    for (int64_t u = begin; u < end; ++u) {
      if (active != nullptr && !active[u]) {
        if (need_h) std::fill(gh + u * F, gh + (u + 1) * F, scalar_t(0));
        continue;
      }
      const scalar_t bu = b[u];
      const scalar_t* __restrict__ hu = h + u * F;
      for (int64_t f = 0; f < F; ++f) g[f] = 0;
      int64_t e = t_indptr[u];
      const int64_t e_end = t_indptr[u + 1];
      while (e < e_end) {
        const int64_t r = t_rel[e];
        const scalar_t a0 = a[t_indices[e]];
        const scalar_t* __restrict__ g0 = G + t_indices[e] * F;
        scalar_t s = 0;
        int64_t run_end = e + 1;
        while (run_end < e_end && run_end - e < 3 && t_rel[run_end] == r) ++run_end;
        if (run_end - e < 3) {  // runs of one or two edges (the self-loop, most typed links): edge by edge
          for (; e < run_end; ++e) {
            prefetch_ahead(e);
            const scalar_t av = a[t_indices[e]];
            const scalar_t* __restrict__ gv = G + t_indices[e] * F;
            const scalar_t c = alpha[r] * av * bu;
            scalar_t se = 0;
#pragma omp simd reduction(+ : se)
            for (int64_t f = 0; f < F; ++f) {
              g[f] += c * gv[f];
              se += hu[f] * gv[f];
            }
            if (need_alpha) rel_acc[r] += double(av) * double(bu) * double(se);
          }
          continue;
        }
#pragma omp simd
        for (int64_t f = 0; f < F; ++f) q[f] = a0 * g0[f];
        prefetch_ahead(e);
        for (++e; e < e_end && t_rel[e] == r; ++e) {
          prefetch_ahead(e);
          const scalar_t av = a[t_indices[e]];
          const scalar_t* __restrict__ gv = G + t_indices[e] * F;
#pragma omp simd
          for (int64_t f = 0; f < F; ++f) q[f] += av * gv[f];
        }
        const scalar_t c = alpha[r] * bu;
#pragma omp simd reduction(+ : s)
        for (int64_t f = 0; f < F; ++f) {
          g[f] += c * q[f];
          s += hu[f] * q[f];
        }
        if (need_alpha) rel_acc[r] += double(bu) * double(s);
      }
      if (need_h) {
        scalar_t* __restrict__ o = gh + u * F;
#pragma omp simd
        for (int64_t f = 0; f < F; ++f) o[f] = g[f];
      }
      if (need_alpha && u < num_dst && (has_a || has_b)) {
        double gdeg = 0;
        if (has_a) {
          const scalar_t* __restrict__ gu = G + u * F;
          const scalar_t* __restrict__ ou = out + u * F;
          scalar_t s = 0;
#pragma omp simd reduction(+ : s)
          for (int64_t f = 0; f < F; ++f) s += gu[f] * ou[f];
          gdeg += double(ka[u]) * double(s);
        }
        if (has_b) {
          scalar_t s = 0;
#pragma omp simd reduction(+ : s)
          for (int64_t f = 0; f < F; ++f) s += hu[f] * g[f];
          gdeg += double(kb[u]) * double(s);
        }
        const scalar_t* c = counts + u * R;
        for (int64_t r = 0; r < R; ++r) deg_acc[r] += double(c[r]) * gdeg;
      }
    }
    for (int64_t r = 0; need_alpha && r < R; ++r) {
      rel_part[tid * R + r] += rel_acc[r];
      rel_part[(slots + tid) * R + r] += deg_acc[r];
    }
  }, costed, 4);
}

// <a, b> over n numbers in eight interleaved partial sums (lane i takes every eighth product from i), added up
// at the end: the eight lanes are one vector operation per step, where one running sum makes every step wait
// for the one before (and a vectorised reduction pays a shuffle tree for every call). Fixed order: the result
// does not depend on the vector unit.
template <typename scalar_t>
inline scalar_t dot(const scalar_t* __restrict__ a, const scalar_t* __restrict__ b, int64_t n) {
  constexpr int L = 8;
  scalar_t acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
#pragma omp simd
    for (int l = 0; l < L; ++l) acc[l] += a[i + l] * b[i + l];
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Multi-head attention aggregation (GAT, GATv2): out[v, k] = sum over in-edges e = (u -> v) of att[e, k] z[u, k]
// for every head k; z is (num_src, H, F), att (E, H) in CSR order. One pass over a destination's edges fills all
// heads (the row of H * F numbers stays in cache), where a product per head needs the heads split into
// contiguous copies and stacked back.
template <typename scalar_t, int FW>
void heads_forward_impl(const int64_t* indptr, const int64_t* indices, const scalar_t* att, const scalar_t* z,
                        scalar_t* out, int64_t num_dst, int64_t H, int64_t F_, bool shared) {
  const int64_t F = FW ? FW : F_;
  const int64_t zrow = shared ? F : H * F, zhead = shared ? 0 : F;  // shared: one row of z serves every head
  parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      scalar_t* __restrict__ o = out + v * H * F;
      for (int64_t i = 0; i < H * F; ++i) o[i] = 0;
      for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
        const scalar_t* __restrict__ zu = z + indices[e] * zrow;
        const scalar_t* ae = att + e * H;
        for (int64_t k = 0; k < H; ++k) {
          const scalar_t w = ae[k];
#pragma omp simd
          for (int64_t f = 0; f < F; ++f) o[k * F + f] += w * zu[k * zhead + f];
        }
      }
    }
  });
}

// Its gradients, in two passes, each writing its output in the order it walks the edges:
//   gatt[e, k] = <G[v, k], z[u, k]>                          by destinations (CSR order, as att and gatt are laid out)
//   gz[u, k]   = sum over out-edges e = (u -> v) of att[e, k] G[v, k]   by sources (CSC order; t_pos maps a CSC
//                position to the edge's CSR position)
// att and gatt hold E * H numbers, far more than any cache on a dense graph (5M edges: 160 MB each), while z and G
// hold one row per node. A single pass by sources wrote gatt and read att at t_pos, one cache miss to memory per
// edge for each (25x the forward on DBLP's APVPA graph); the destination pass streams them, and the source pass
// asks for att's next rows kPrefetch edges ahead. gz's sums keep the single pass's order; gatt's dot products
// are taken in dot()'s order.
template <typename scalar_t, int FW>
void heads_backward_impl(const int64_t* indptr, const int64_t* indices, const int64_t* t_indptr,
                         const int64_t* t_indices, const int64_t* t_pos, const scalar_t* att, const scalar_t* G,
                         const scalar_t* z, scalar_t* gz, scalar_t* gatt, int64_t num_dst, int64_t num_src, int64_t H,
                         int64_t F_, bool shared) {
  const int64_t F = FW ? FW : F_;
  const int64_t zrow = shared ? F : H * F, zhead = shared ? 0 : F;
  if (gatt) {
    const int64_t E = indptr[num_dst];
    parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
      for (int64_t v = begin; v < end; ++v) {
        const scalar_t* __restrict__ Gv = G + v * H * F;
        for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
          if (e + kPrefetch < E) prefetch_row(z + indices[e + kPrefetch] * zrow, zrow);
          const scalar_t* __restrict__ zu = z + indices[e] * zrow;
          for (int64_t k = 0; k < H; ++k) gatt[e * H + k] = dot(Gv + k * F, zu + k * zhead, F);
        }
      }
    });
  }
  if (gz) {
    const int64_t E = t_indptr[num_src];
    parallel_rows(t_indptr, num_src, [&](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        scalar_t* __restrict__ g = gz + u * zrow;
        for (int64_t i = 0; i < zrow; ++i) g[i] = 0;
        for (int64_t j = t_indptr[u]; j < t_indptr[u + 1]; ++j) {
          if (j + kPrefetch < E) {
            prefetch_row(G + t_indices[j + kPrefetch] * H * F, H * F);
            prefetch_row(att + t_pos[j + kPrefetch] * H, H);
          }
          const scalar_t* __restrict__ Gv = G + t_indices[j] * H * F;
          const scalar_t* __restrict__ ae = att + t_pos[j] * H;
          for (int64_t k = 0; k < H; ++k) {
            const scalar_t w = ae[k];
#pragma omp simd
            for (int64_t f = 0; f < F; ++f) g[k * zhead + f] += w * Gv[k * F + f];
          }
        }
      }
    });
  }
}

// Dropout whose mask is a hash of (seed, element index): element i is kept when the top 16 bits of
// lowbias32(lowbias32(i + k1) ^ k2 ^ (i >> 32)) reach threshold (p quantised to 1/65536), k1 and k2 the halves of
// the seed, and kept elements are scaled by 1 / (1 - p). 32-bit integer arithmetic, one hash per element, so the
// loop vectorises. The same call on the output gradient is the backward: the mask is recomputed, never stored.
inline uint32_t lowbias32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  return x ^ (x >> 16);
}

template <typename scalar_t>
void hash_dropout_impl(const scalar_t* x, scalar_t* out, int64_t n, uint64_t seed, uint32_t threshold,
                       scalar_t scale) {
  at::parallel_for(0, n, 1 << 16, [&](int64_t i0, int64_t i1) {
    // locals, not the captured references: a store to out could alias those, which keeps the loop scalar
    const uint32_t k1 = uint32_t(seed), k2 = uint32_t(seed >> 32), thr = threshold;
    const scalar_t s = scale;
    const scalar_t* __restrict__ xi = x;
    scalar_t* __restrict__ o = out;
#pragma omp simd
    for (int64_t i = i0; i < i1; ++i) {
      const uint32_t h = lowbias32(lowbias32(uint32_t(i) + k1) ^ k2 ^ uint32_t(uint64_t(i) >> 32));
      o[i] = xi[i] * ((h >> 16) >= thr ? s : scalar_t(0));
    }
  });
}

// GATv2 attention logits without the (E, H, F) intermediate: for every edge e = (u -> v) (CSR order) and head k,
//   s[e, k] = sum over f of attn[k, f] * LeakyReLU(zs[u, k, f] + zd[v, k, f]).
// The per-edge sum t = zs[u] + zd[v] is recomputed where needed (forward and both backward passes) instead of
// being stored: E * H * F numbers (272 MB a layer on DBLP with 4 x 64 heads) written and read back by every
// elementwise step is what made GATv2 cost ~8x GAT on CPU.
template <typename scalar_t, int FW>
void v2_scores_impl(const int64_t* indptr, const int64_t* indices, const scalar_t* zs, const scalar_t* zd,
                    const scalar_t* attn, scalar_t* s, int64_t num_dst, int64_t H, int64_t F_, scalar_t slope) {
  parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
    const int64_t F = FW ? FW : F_, HF = H * F;  // locals: see v2_scores_backward_impl
    const scalar_t sl = slope;
    for (int64_t v = begin; v < end; ++v) {
      const scalar_t* __restrict__ zdv = zd + v * HF;
      for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
        const scalar_t* __restrict__ zsu = zs + indices[e] * HF;
        for (int64_t k = 0; k < H; ++k) {
          const scalar_t* __restrict__ ak = attn + k * F;
          const scalar_t* __restrict__ xs = zsu + k * F;
          const scalar_t* __restrict__ xd = zdv + k * F;
          scalar_t acc = 0;
#pragma omp simd reduction(+ : acc)
          for (int64_t f = 0; f < F; ++f) {
            const scalar_t t = xs[f] + xd[f];
            acc += ak[f] * (std::max(t, scalar_t(0)) + sl * std::min(t, scalar_t(0)));  // branch-free LeakyReLU
          }
          s[e * H + k] = acc;
        }
      }
    }
  });
}

// Its gradients from gs (E, H), in two passes that each own their output rows (no atomics):
//   by destinations (CSR): gzd[v, k] = sum over in-edges of gs[e, k] attn[k] LeakyReLU'(t), and the attention
//     vector's gradient sum gs[e, k] LeakyReLU(t) in per-thread partial rows (added up in fixed order);
//   by sources (CSC, t_pos gives an edge's CSR position): gzs[u, k] = the same sum over out-edges.
template <typename scalar_t, int FW>
void v2_scores_backward_impl(const int64_t* indptr, const int64_t* indices, const int64_t* t_indptr,
                             const int64_t* t_indices, const int64_t* t_pos, const scalar_t* zs,
                             const scalar_t* zd, const scalar_t* attn, const scalar_t* gs, scalar_t* gzs,
                             scalar_t* gzd, scalar_t* gattn_part, int64_t num_src, int64_t num_dst, int64_t H,
                             int64_t F_, scalar_t slope, int64_t slots) {
  // (copied into each loop body: values reached through the lambda's captures are reloaded after every store,
  // which keeps the compiler from vectorising the update loops)
  if (gzd || gattn_part) {
    parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
      const int64_t F = FW ? FW : F_, HF = H * F;
      const scalar_t sl = slope;
      const int64_t tid = at::get_thread_num();
      TORCH_CHECK(tid < slots, "re_aggregate: thread ", tid, " beyond the ", slots, " partial-sum rows");
      scalar_t* __restrict__ ga = gattn_part ? gattn_part + tid * HF : nullptr;
      for (int64_t v = begin; v < end; ++v) {
        const scalar_t* __restrict__ zdv = zd + v * HF;
        scalar_t* __restrict__ gd = gzd ? gzd + v * HF : nullptr;
        if (gd)
          for (int64_t i = 0; i < HF; ++i) gd[i] = 0;
        for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
          const scalar_t* __restrict__ zsu = zs + indices[e] * HF;
          for (int64_t k = 0; k < H; ++k) {
            const scalar_t g = gs[e * H + k];
            const scalar_t* __restrict__ ak = attn + k * F;
            const scalar_t* __restrict__ xs = zsu + k * F;
            const scalar_t* __restrict__ xd = zdv + k * F;
            if (gd) {
              scalar_t* __restrict__ o = gd + k * F;
#pragma omp simd
              for (int64_t f = 0; f < F; ++f) {
                const scalar_t t = xs[f] + xd[f];
                o[f] += g * ak[f] * (t > 0 ? scalar_t(1) : sl);
              }
            }
            if (ga) {
              scalar_t* __restrict__ o = ga + k * F;
#pragma omp simd
              for (int64_t f = 0; f < F; ++f) {
                const scalar_t t = xs[f] + xd[f];
                o[f] += g * (t > 0 ? t : sl * t);
              }
            }
          }
        }
      }
    });
  }
  if (gzs) {
    parallel_rows(t_indptr, num_src, [&](int64_t begin, int64_t end) {
      const int64_t F = FW ? FW : F_, HF = H * F;
      const scalar_t sl = slope;
      for (int64_t u = begin; u < end; ++u) {
        const scalar_t* __restrict__ zsu = zs + u * HF;
        scalar_t* __restrict__ gu = gzs + u * HF;
        for (int64_t i = 0; i < HF; ++i) gu[i] = 0;
        for (int64_t j = t_indptr[u]; j < t_indptr[u + 1]; ++j) {
          const scalar_t* __restrict__ zdv = zd + t_indices[j] * HF;
          const int64_t e = t_pos[j];
          for (int64_t k = 0; k < H; ++k) {
            const scalar_t g = gs[e * H + k];
            const scalar_t* __restrict__ ak = attn + k * F;
            const scalar_t* __restrict__ xs = zsu + k * F;
            const scalar_t* __restrict__ xd = zdv + k * F;
            scalar_t* __restrict__ o = gu + k * F;
#pragma omp simd
            for (int64_t f = 0; f < F; ++f) {
              const scalar_t t = xs[f] + xd[f];
              o[f] += g * ak[f] * (t > 0 ? scalar_t(1) : sl);
            }
          }
        }
      }
    });
  }
}

// e^x for the softmax: std::exp in double; in float a branch-free exp (Cephes' expf: x = n ln2 + r with
// n rounded to the nearest integer, |r| <= ln2 / 2, e^r by its degree-7 polynomial, 2^n through the exponent bits; within 2 ulp of std::exp) that the
// compiler vectorises, where std::exp is one library call per number. 0 below -87.3, where float's exp leaves the
// normal range (the softmax's arguments are <= 0: its row's maximum is subtracted first).
inline double softmax_exp(double x) { return std::exp(x); }
inline float softmax_exp(float x) {
  const float xc = std::min(std::max(x, -87.3f), 88.0f);
  const float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer, which its low bits then hold
  const float shifted = xc * 1.44269504088896341f + magic;
  const float n = shifted - magic;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t ni = __builtin_bit_cast(int32_t, shifted) - __builtin_bit_cast(int32_t, magic);
  const float scale = __builtin_bit_cast(float, (ni + 127) << 23);  // 2^n
  return x < -87.3f ? 0.0f : p * scale;
}

// A destination's row of n x H numbers (in-edges x heads) is walked in chunks of L = min(n, 16) H numbers: a
// chunk's position j always holds head j mod H, so every step is one elementwise loop over a chunk (vectorised),
// with a per-position partial (maximum, sum) combined per head at the end. The order of every sum is fixed by the
// row's length and H, not by the machine; a short row (most nodes have a few in-edges) pays for its own length.
template <typename scalar_t>
struct RowLanes {
  int64_t H, L = 0;
  std::vector<scalar_t> lane, head;  // per position of a chunk; per head
  explicit RowLanes(int64_t H_) : H(H_), lane(16 * H_), head(H_) {}

  // head[k] = the maximum (sum) over the row's numbers of head k; sets L for the row (size = n H)
  template <bool Sum>
  void reduce(const scalar_t* __restrict__ x, int64_t size) {
    L = std::min<int64_t>(size, 16 * H);
    scalar_t* __restrict__ p = lane.data();
    const scalar_t init = Sum ? scalar_t(0) : -std::numeric_limits<scalar_t>::infinity();
    for (int64_t j = 0; j < L; ++j) p[j] = init;
    for (int64_t c = 0; c < size; c += L) {
      const int64_t m = std::min(L, size - c);
#pragma omp simd
      for (int64_t j = 0; j < m; ++j) p[j] = Sum ? p[j] + x[c + j] : std::max(p[j], x[c + j]);
    }
    for (int64_t k = 0; k < H; ++k) head[k] = init;
    for (int64_t c = 0; c < L; c += H)
      for (int64_t k = 0; k < H; ++k) head[k] = Sum ? head[k] + p[c + k] : std::max(head[k], p[c + k]);
  }

  // f(i, head[i mod H]) for every number i of the row (of the last reduce), chunk by chunk
  template <typename F>
  void over_row(int64_t size, F&& f) {
    for (int64_t c = 0; c < L; c += H)
      for (int64_t k = 0; k < H; ++k) lane[c + k] = head[k];
    const scalar_t* __restrict__ p = lane.data();
    for (int64_t c = 0; c < size; c += L) {
      const int64_t m = std::min(L, size - c);
#pragma omp simd
      for (int64_t j = 0; j < m; ++j) f(c + j, p[j]);
    }
  }
};

// softmax per head over a row x (n x H, in place)
template <typename scalar_t>
void softmax_row(scalar_t* __restrict__ x, int64_t size, RowLanes<scalar_t>& r) {
  r.template reduce<false>(x, size);
  r.over_row(size, [&](int64_t i, scalar_t top) { x[i] = softmax_exp(x[i] - top); });
  r.template reduce<true>(x, size);
  r.over_row(size, [&](int64_t i, scalar_t sum) { x[i] /= sum; });
}

// the softmax's backward over a row: gs = out * g - out * (sum over the row of out * g), per head
template <typename scalar_t>
void softmax_row_backward(const scalar_t* __restrict__ out, const scalar_t* __restrict__ g, scalar_t* __restrict__ gs,
                          int64_t size, RowLanes<scalar_t>& r) {
#pragma omp simd
  for (int64_t i = 0; i < size; ++i) gs[i] = out[i] * g[i];
  r.template reduce<true>(gs, size);
  r.over_row(size, [&](int64_t i, scalar_t dot) { gs[i] -= out[i] * dot; });
}

// Softmax of score (E, H) over the in-edges of every destination (CSR rows), per head: one pass per step over a
// row that stays in cache, where torch's segment ops take a pass over all E * H numbers for each.
template <typename scalar_t>
void edge_softmax_impl(const int64_t* indptr, const scalar_t* s, scalar_t* out, int64_t num_dst, int64_t H) {
  parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
    RowLanes<scalar_t> r(H);
    for (int64_t v = begin; v < end; ++v) {
      const int64_t e0 = indptr[v] * H, size = (indptr[v + 1] - indptr[v]) * H;
      std::copy(s + e0, s + e0 + size, out + e0);
      softmax_row(out + e0, size, r);
    }
  });
}

template <typename scalar_t>
void edge_softmax_backward_impl(const int64_t* indptr, const scalar_t* out, const scalar_t* g, scalar_t* gs,
                                int64_t num_dst, int64_t H) {
  parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
    RowLanes<scalar_t> r(H);
    for (int64_t v = begin; v < end; ++v) {
      const int64_t e0 = indptr[v] * H, size = (indptr[v + 1] - indptr[v]) * H;
      softmax_row_backward(out + e0, g + e0, gs + e0, size, r);
    }
  });
}

// GAT's attention in one pass per destination v (CSR rows): for every in-edge e = (u -> v) and head k
//   t[e, k] = (el[u, k] + er[v, k]) + w[e, k]   (w: (E, H) relation weights, or the constant c where w is empty)
//   a[e, k] = softmax over v's in-edges of LeakyReLU(t[e, k])
// the same operations in the same order as the gathers, additions, LeakyReLU and edge_softmax it replaces (so
// the same numbers), without writing and reading back four (E, H) arrays between them.
template <typename scalar_t>
inline scalar_t gat_logit(const int64_t* indices, const scalar_t* el, const scalar_t* erv, const scalar_t* w,
                          scalar_t c, int64_t e, int64_t k, int64_t H) {
  const scalar_t t = el[indices[e] * H + k] + erv[k];
  return w ? t + w[e * H + k] : t + c;
}

template <typename scalar_t, int HW>
void gat_softmax_impl(const int64_t* indptr, const int64_t* indices, const scalar_t* el, const scalar_t* er,
                      const scalar_t* w, scalar_t c, scalar_t slope, scalar_t* out, int64_t num_dst, int64_t H_) {
  const int64_t H = HW ? HW : H_;  // a compile-time head count lets the per-edge loop unroll
  parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
    RowLanes<scalar_t> r(H);
    for (int64_t v = begin; v < end; ++v) {
      const int64_t e0 = indptr[v], e1 = indptr[v + 1];
      const scalar_t* erv = er + v * H;
      for (int64_t e = e0; e < e1; ++e)
        for (int64_t k = 0; k < H; ++k) {
          const scalar_t t = gat_logit(indices, el, erv, w, c, e, k, H);
          out[e * H + k] = t > 0 ? t : t * slope;
        }
      softmax_row(out + e0 * H, (e1 - e0) * H, r);
    }
  });
}

// Its gradients from a (the output) and g (a's gradient): gt = LeakyReLU'(t) * (a * g - a * sum over the row of
// a * g), t recomputed; ger[v] = the row's sum of gt (CSR order), gt written out for gel (summed per source by the
// caller) and w. As edge_softmax's, leaky_relu's and the gathers' backward, in their order.
template <typename scalar_t, int HW>
void gat_softmax_backward_impl(const int64_t* indptr, const int64_t* indices, const scalar_t* el, const scalar_t* er,
                               const scalar_t* w, scalar_t c, scalar_t slope, const scalar_t* a, const scalar_t* g,
                               scalar_t* gt, scalar_t* ger, int64_t num_dst, int64_t H_) {
  const int64_t H = HW ? HW : H_;
  parallel_rows(indptr, num_dst, [&](int64_t begin, int64_t end) {
    RowLanes<scalar_t> r(H);
    for (int64_t v = begin; v < end; ++v) {
      const int64_t e0 = indptr[v], e1 = indptr[v + 1];
      const scalar_t* erv = er + v * H;
      softmax_row_backward(a + e0 * H, g + e0 * H, gt + e0 * H, (e1 - e0) * H, r);
      for (int64_t e = e0; e < e1; ++e)
        for (int64_t k = 0; k < H; ++k)
          if (!(gat_logit(indices, el, erv, w, c, e, k, H) > 0)) gt[e * H + k] *= slope;
      if (!ger) continue;
      scalar_t* __restrict__ acc = r.head.data();  // the row's sum per head, edge after edge (the gather's order)
      for (int64_t k = 0; k < H; ++k) acc[k] = 0;
      for (int64_t e = e0; e < e1; ++e)
        for (int64_t k = 0; k < H; ++k) acc[k] += gt[e * H + k];
      for (int64_t k = 0; k < H; ++k) ger[v * H + k] = acc[k];
    }
  });
}

// Sums of per-edge rows (E, C) over segments: out[r] = sum over j in [indptr[r], indptr[r + 1]) of
// values[pos[j]] (values[j] without pos). With the CSR indptr: per destination; with the CSC indptr and the CSC
// -> CSR positions: per source. Each output row is one thread's: no atomics, the order fixed.
template <typename scalar_t>
void segment_sum_impl(const int64_t* indptr, const int64_t* pos, const scalar_t* values, scalar_t* out, int64_t n,
                      int64_t C) {
  const int64_t E = indptr[n];
  parallel_rows(indptr, n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      scalar_t* __restrict__ o = out + r * C;
      for (int64_t c = 0; c < C; ++c) o[c] = 0;
      for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j) {
        // through pos the rows are read from anywhere in values (E rows, beyond the caches on a dense graph)
        if (pos && j + kPrefetch < E) prefetch_row(values + pos[j + kPrefetch] * C, C);
        const scalar_t* __restrict__ x = values + (pos ? pos[j] : j) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) o[c] += x[c];
      }
    }
  });
}

// calls body(std::integral_constant<int, N>()) with N the one of Ns equal to n (a compile-time constant, so that
// the loops over it unroll and vectorise), or with N = 0 (n at run time) where none is
template <int... Ns, typename Body>
void by_constant(int64_t n, Body&& body) {
  bool done = false;
  ((!done && n == Ns ? (body(std::integral_constant<int, Ns>()), done = true) : false), ...);
  if (!done) body(std::integral_constant<int, 0>());
}

// the common row widths (3: class scores, which the last layer aggregates) and head counts
template <typename Body>
void by_width(int64_t F, Body&& body) {
  by_constant<64, 32, 16, 8, 4, 3, 2>(F, body);
}

template <typename Body>
void by_heads(int64_t H, Body&& body) {
  by_constant<1, 2, 4, 8>(H, body);
}

void check(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous(), name, " must be a contiguous CPU tensor");
}

// index arrays int64 (DGL's), one int32 relation id per edge, indptr ending at the edge count
void check_graph(const torch::Tensor& indptr, const torch::Tensor& indices, const torch::Tensor& rel,
                 const torch::Tensor& alpha) {
  TORCH_CHECK(indptr.scalar_type() == torch::kInt64 && indices.scalar_type() == torch::kInt64,
              "re_aggregate: indptr and indices must be int64");
  TORCH_CHECK(rel.scalar_type() == torch::kInt32 && rel.numel() == indices.numel(),
              "re_aggregate: one int32 relation id per edge");
  TORCH_CHECK(indptr.numel() >= 1 && indptr.data_ptr<int64_t>()[indptr.numel() - 1] == indices.numel(),
              "re_aggregate: bad indptr");
  // relation ids < alpha.size(0): checked once per graph by the caller (a pass over the edges per call would not be)
}

}  // namespace

torch::Tensor re_aggregate_forward(torch::Tensor indptr, torch::Tensor indices, torch::Tensor rel, torch::Tensor alpha,
                                   torch::Tensor a, torch::Tensor b, torch::Tensor h) {
  for (auto* t : {&indptr, &indices, &rel, &alpha, &a, &b, &h}) check(*t, "every argument");
  check_graph(indptr, indices, rel, alpha);
  const int64_t num_dst = indptr.size(0) - 1, F = h.size(1);
  TORCH_CHECK(a.numel() == num_dst && b.numel() == h.size(0), "re_aggregate_forward: scales do not fit the graph");
  auto out = torch::empty({num_dst, F}, h.options());
  AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "re_aggregate_forward", [&] {
    by_width(F, [&](auto fw) {
      forward_impl<scalar_t, decltype(fw)::value>(
          indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(), rel.data_ptr<int32_t>(), alpha.data_ptr<scalar_t>(),
          a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), h.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), num_dst, F);
    });
  });
  return out;
}

// Returns (grad h or an empty tensor, grad alpha (R,) or an undefined tensor).
std::vector<torch::Tensor> re_aggregate_backward(torch::Tensor t_indptr, torch::Tensor t_indices, torch::Tensor t_rel,
                                                 torch::Tensor alpha, torch::Tensor a, torch::Tensor b,
                                                 torch::Tensor G, torch::Tensor h, torch::Tensor out,
                                                 torch::Tensor counts, torch::Tensor ka, torch::Tensor kb,
                                                 bool has_a, bool has_b, bool need_h, bool need_alpha,
                                                 torch::Tensor active) {
  for (auto* t : {&t_indptr, &t_indices, &t_rel, &alpha, &a, &b, &G, &h, &out, &counts, &ka, &kb, &active})
    check(*t, "every argument");
  check_graph(t_indptr, t_indices, t_rel, alpha);
  const int64_t num_src = t_indptr.size(0) - 1, num_dst = G.size(0), F = h.size(1), R = alpha.size(0);
  TORCH_CHECK(h.size(0) == num_src && b.numel() == num_src && a.numel() == num_dst && G.size(1) == F &&
                  counts.size(0) == num_dst && counts.size(1) == R,
              "re_aggregate_backward: shapes do not fit the graph");
  TORCH_CHECK(!has_b || num_src == num_dst, "scaled sources need as many sources as destinations");
  TORCH_CHECK(num_dst <= num_src, "re_aggregate_backward: more destinations than sources");
  TORCH_CHECK(active.numel() == 0 || (active.scalar_type() == torch::kUInt8 && active.numel() == num_src),
              "re_aggregate_backward: active must be empty or one uint8 per source");
  const int64_t slots = at::get_num_threads();
  auto gh = torch::empty({need_h ? num_src : 0, F}, h.options());
  auto part = torch::zeros({need_alpha ? 2 * slots : 0, R}, h.options().dtype(torch::kFloat64));
  AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "re_aggregate_backward", [&] {
    by_width(F, [&](auto fw) {
      backward_impl<scalar_t, decltype(fw)::value>(
          t_indptr.data_ptr<int64_t>(), t_indices.data_ptr<int64_t>(), t_rel.data_ptr<int32_t>(),
          alpha.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), G.data_ptr<scalar_t>(),
          h.data_ptr<scalar_t>(), need_h ? gh.data_ptr<scalar_t>() : nullptr, out.data_ptr<scalar_t>(),
          counts.data_ptr<scalar_t>(), ka.data_ptr<scalar_t>(), kb.data_ptr<scalar_t>(),
          need_alpha ? part.data_ptr<double>() : nullptr, num_src, num_dst, R, F, need_h, need_alpha, has_a, has_b,
          slots, active.numel() ? active.data_ptr<uint8_t>() : nullptr);
    });
  });
  if (!need_alpha) return {gh, torch::Tensor()};
  return {gh, part.sum(0).to(h.scalar_type())};
}

// Destination and source scales of the weighted degree deg = counts @ alpha, clamped at 1, and the factors
// ka = (da/ddeg) / a, kb = (db/ddeg) / b (0 where the clamp holds) for norm 0 (none), 1 (right: a = 1/d),
// 2 (both: a = b = d^-1/2). Returns (a, b, ka, kb); unscaled sides are ones (factor 0). alpha (R,) gives (n,)
// each; alpha (L, R), the weights of L layers, gives (L, n) each in one call (the same numbers per layer).
std::vector<torch::Tensor> re_scales(torch::Tensor counts, torch::Tensor alpha, int64_t norm) {
  check(counts, "counts");
  check(alpha, "alpha");
  TORCH_CHECK(alpha.dim() == 1 || alpha.dim() == 2, "re_scales: alpha must be (R,) or (layers, R)");
  const int64_t n = counts.size(0), R = counts.size(1), L = alpha.dim() == 2 ? alpha.size(0) : 1;
  TORCH_CHECK(alpha.size(-1) == R && alpha.scalar_type() == counts.scalar_type(),
              "re_scales: alpha must have one weight per column of counts, of counts' dtype");
  const std::vector<int64_t> shape = alpha.dim() == 2 ? std::vector<int64_t>{L, n} : std::vector<int64_t>{n};
  auto a = torch::empty(shape, counts.options()), ka = torch::empty(shape, counts.options());
  AT_DISPATCH_FLOATING_TYPES(counts.scalar_type(), "re_scales", [&] {
    const scalar_t* c = counts.data_ptr<scalar_t>();
    scalar_t* ap = a.data_ptr<scalar_t>();
    scalar_t* kp = ka.data_ptr<scalar_t>();
    at::parallel_for(0, L * n, 2048, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end;) {  // [i, stop): nodes of one layer
        const int64_t l = i / n, stop = std::min(end, (l + 1) * n);
        const scalar_t* al = alpha.data_ptr<scalar_t>() + l * R;
        scalar_t* __restrict__ al_a = ap + l * n;
        scalar_t* __restrict__ al_k = kp + l * n;
        for (int64_t v = i - l * n; v < stop - l * n; ++v) {
          scalar_t deg = 0;
          for (int64_t r = 0; r < R; ++r) deg += c[v * R + r] * al[r];
          const bool live = deg >= scalar_t(1);
          const scalar_t d = live ? deg : scalar_t(1);
          if (norm == 2) {
            al_a[v] = scalar_t(1) / std::sqrt(d);
            al_k[v] = live ? scalar_t(-0.5) / d : scalar_t(0);
          } else if (norm == 1) {
            al_a[v] = scalar_t(1) / d;
            al_k[v] = live ? scalar_t(-1) / d : scalar_t(0);
          } else {
            al_a[v] = 1;
            al_k[v] = 0;
          }
        }
        i = stop;
      }
    });
  });
  if (norm == 2) return {a, a, ka, ka};
  auto ones = torch::ones(shape, counts.options()), zeros = torch::zeros(shape, counts.options());
  if (norm == 1) return {a, ones, ka, zeros};
  return {ones, ones, zeros, zeros};
}

// out (num_dst, H, F) from att (E, H) in CSR order and z (num_src, H, F)
torch::Tensor heads_forward(torch::Tensor indptr, torch::Tensor indices, torch::Tensor att, torch::Tensor z) {
  for (auto* t : {&indptr, &indices, &att, &z}) check(*t, "every argument");
  TORCH_CHECK(indptr.scalar_type() == torch::kInt64 && indices.scalar_type() == torch::kInt64,
              "heads_forward: indptr and indices must be int64");
  TORCH_CHECK(z.dim() == 3 && att.dim() == 2 && att.size(0) == indices.numel() &&
              (att.size(1) == z.size(1) || z.size(1) == 1) && att.scalar_type() == z.scalar_type(),
              "heads_forward: att must be (E, H) and z (N, H, F) or (N, 1, F)");
  const int64_t num_dst = indptr.size(0) - 1, H = att.size(1), F = z.size(2);
  const bool shared = z.size(1) == 1 && H > 1;
  auto out = torch::empty({num_dst, H, F}, z.options());
  AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "heads_forward", [&] {
    by_width(F, [&](auto fw) {
      heads_forward_impl<scalar_t, decltype(fw)::value>(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(),
          att.data_ptr<scalar_t>(), z.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), num_dst, H, F, shared);
    });
  });
  return out;
}

// (grad z or an empty tensor, grad att or an empty tensor) from G (num_dst, H, F)
std::vector<torch::Tensor> heads_backward(torch::Tensor indptr, torch::Tensor indices, torch::Tensor t_indptr,
                                          torch::Tensor t_indices, torch::Tensor t_pos, torch::Tensor att,
                                          torch::Tensor G, torch::Tensor z, bool need_z, bool need_att) {
  for (auto* t : {&indptr, &indices, &t_indptr, &t_indices, &t_pos, &att, &G, &z}) check(*t, "every argument");
  TORCH_CHECK(G.dim() == 3 && z.dim() == 3 && (G.size(1) == z.size(1) || z.size(1) == 1) &&
              G.size(2) == z.size(2) && att.size(0) == t_indices.numel() && t_pos.numel() == t_indices.numel() &&
              indices.numel() == t_indices.numel() && G.size(0) == indptr.size(0) - 1,
              "heads_backward: shapes do not fit the graph");
  const int64_t num_src = t_indptr.size(0) - 1, H = G.size(1), F = z.size(2);
  const bool shared = z.size(1) == 1 && H > 1;
  TORCH_CHECK(z.size(0) == num_src, "heads_backward: z must have one row per source");
  auto gz = need_z ? torch::empty_like(z) : torch::empty({0}, z.options());
  auto gatt = need_att ? torch::empty_like(att) : torch::empty({0}, att.options());
  AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "heads_backward", [&] {
    by_width(F, [&](auto fw) {
      heads_backward_impl<scalar_t, decltype(fw)::value>(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(),
          t_indptr.data_ptr<int64_t>(), t_indices.data_ptr<int64_t>(), t_pos.data_ptr<int64_t>(),
          att.data_ptr<scalar_t>(), G.data_ptr<scalar_t>(), z.data_ptr<scalar_t>(),
          need_z ? gz.data_ptr<scalar_t>() : nullptr, need_att ? gatt.data_ptr<scalar_t>() : nullptr, G.size(0),
          num_src, H, F, shared);
    });
  });
  return {gz, gatt};
}

// x with the hashed dropout mask of (seed, p) applied (see hash_dropout_impl); also its backward, on the gradient
torch::Tensor hash_dropout(torch::Tensor x, double p, int64_t seed) {
  check(x, "x");
  TORCH_CHECK(p >= 0 && p < 1, "hash_dropout: p must be in [0, 1)");
  auto out = torch::empty_like(x);
  const uint32_t threshold = uint32_t(std::lround(p * 65536.0));
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "hash_dropout", [&] {
    hash_dropout_impl<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.numel(), uint64_t(seed),
                                threshold, scalar_t(65536.0 / (65536.0 - threshold)));
  });
  return out;
}

// GATv2 logits (E, H) in CSR order from zs (num_src, H, F), zd (num_dst, H, F) and attn (H, F)
torch::Tensor v2_scores(torch::Tensor indptr, torch::Tensor indices, torch::Tensor zs, torch::Tensor zd,
                        torch::Tensor attn, double slope) {
  for (auto* t : {&indptr, &indices, &zs, &zd, &attn}) check(*t, "every argument");
  TORCH_CHECK(indptr.scalar_type() == torch::kInt64 && indices.scalar_type() == torch::kInt64,
              "v2_scores: indptr and indices must be int64");
  const int64_t num_dst = indptr.size(0) - 1;
  TORCH_CHECK(zs.dim() == 3 && zd.dim() == 3 && zd.size(0) == num_dst && zs.size(1) == zd.size(1) &&
                  zs.size(2) == zd.size(2) && attn.dim() == 2 && attn.size(0) == zs.size(1) &&
                  attn.size(1) == zs.size(2) && zs.scalar_type() == zd.scalar_type() &&
                  attn.scalar_type() == zs.scalar_type(),
              "v2_scores: zs must be (num_src, H, F), zd (num_dst, H, F) and attn (H, F), of one dtype");
  const int64_t H = zs.size(1), F = zs.size(2);
  auto s = torch::empty({indices.numel(), H}, zs.options());
  AT_DISPATCH_FLOATING_TYPES(zs.scalar_type(), "v2_scores", [&] {
    by_width(F, [&](auto fw) {
      v2_scores_impl<scalar_t, decltype(fw)::value>(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(),
          zs.data_ptr<scalar_t>(), zd.data_ptr<scalar_t>(), attn.data_ptr<scalar_t>(), s.data_ptr<scalar_t>(),
          num_dst, H, F, scalar_t(slope));
    });
  });
  return s;
}

// (grad zs, grad zd, grad attn), each an empty tensor where not needed, from gs (E, H)
std::vector<torch::Tensor> v2_scores_backward(torch::Tensor indptr, torch::Tensor indices, torch::Tensor t_indptr,
                                              torch::Tensor t_indices, torch::Tensor t_pos, torch::Tensor zs,
                                              torch::Tensor zd, torch::Tensor attn, torch::Tensor gs,
                                              double slope, bool need_zs, bool need_zd, bool need_attn) {
  for (auto* t : {&indptr, &indices, &t_indptr, &t_indices, &t_pos, &zs, &zd, &attn, &gs})
    check(*t, "every argument");
  const int64_t num_dst = indptr.size(0) - 1, num_src = t_indptr.size(0) - 1, H = zs.size(1), F = zs.size(2);
  TORCH_CHECK(zs.size(0) == num_src && zd.size(0) == num_dst && gs.size(0) == indices.numel() &&
                  gs.size(1) == H && t_pos.numel() == indices.numel() && t_indices.numel() == indices.numel(),
              "v2_scores_backward: shapes do not fit the graph");
  const int64_t slots = at::get_num_threads();
  auto gzs = need_zs ? torch::empty_like(zs) : torch::empty({0}, zs.options());
  auto gzd = need_zd ? torch::empty_like(zd) : torch::empty({0}, zd.options());
  auto part = torch::zeros({need_attn ? slots : 0, H, F}, zs.options());
  AT_DISPATCH_FLOATING_TYPES(zs.scalar_type(), "v2_scores_backward", [&] {
    by_width(F, [&](auto fw) {
      v2_scores_backward_impl<scalar_t, decltype(fw)::value>(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(),
          t_indptr.data_ptr<int64_t>(), t_indices.data_ptr<int64_t>(), t_pos.data_ptr<int64_t>(),
          zs.data_ptr<scalar_t>(), zd.data_ptr<scalar_t>(), attn.data_ptr<scalar_t>(), gs.data_ptr<scalar_t>(),
          need_zs ? gzs.data_ptr<scalar_t>() : nullptr, need_zd ? gzd.data_ptr<scalar_t>() : nullptr,
          need_attn ? part.data_ptr<scalar_t>() : nullptr, num_src, num_dst, H, F, scalar_t(slope), slots);
    });
  });
  return {gzs, gzd, need_attn ? part.sum(0) : torch::empty({0}, zs.options())};
}

// softmax of score (E, H) over every destination's in-edges (CSR order)
torch::Tensor edge_softmax(torch::Tensor indptr, torch::Tensor score) {
  for (auto* t : {&indptr, &score}) check(*t, "every argument");
  TORCH_CHECK(indptr.scalar_type() == torch::kInt64 && score.dim() == 2 &&
                  indptr.data_ptr<int64_t>()[indptr.numel() - 1] == score.size(0),
              "edge_softmax: score must be (E, H) for the indptr's E edges");
  auto out = torch::empty_like(score);
  AT_DISPATCH_FLOATING_TYPES(score.scalar_type(), "edge_softmax", [&] {
    edge_softmax_impl<scalar_t>(indptr.data_ptr<int64_t>(), score.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                                indptr.size(0) - 1, score.size(1));
  });
  return out;
}

// gradient of edge_softmax's score from its output and the output's gradient g (both (E, H))
torch::Tensor edge_softmax_backward(torch::Tensor indptr, torch::Tensor out, torch::Tensor g) {
  for (auto* t : {&indptr, &out, &g}) check(*t, "every argument");
  TORCH_CHECK(indptr.scalar_type() == torch::kInt64 && out.dim() == 2 && g.sizes() == out.sizes() &&
                  g.scalar_type() == out.scalar_type() &&
                  indptr.data_ptr<int64_t>()[indptr.numel() - 1] == out.size(0),
              "edge_softmax_backward: out and g must be (E, H) for the indptr's E edges, of one dtype");
  auto gs = torch::empty_like(out);
  AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), "edge_softmax_backward", [&] {
    edge_softmax_backward_impl<scalar_t>(indptr.data_ptr<int64_t>(), out.data_ptr<scalar_t>(),
                                         g.data_ptr<scalar_t>(), gs.data_ptr<scalar_t>(), indptr.size(0) - 1,
                                         out.size(1));
  });
  return gs;
}

// (n, C) sums of values (E, C) over the segments of indptr (n + 1), through pos (E,) where it is not empty
torch::Tensor segment_sum(torch::Tensor indptr, torch::Tensor pos, torch::Tensor values) {
  for (auto* t : {&indptr, &pos, &values}) check(*t, "every argument");
  const int64_t E = indptr.data_ptr<int64_t>()[indptr.numel() - 1];
  TORCH_CHECK(indptr.scalar_type() == torch::kInt64 && pos.scalar_type() == torch::kInt64 && values.dim() == 2 &&
                  values.size(0) == E && (pos.numel() == 0 || pos.numel() == E),
              "segment_sum: values must be (E, C) and pos empty or (E,) for the indptr's E edges");
  const int64_t n = indptr.size(0) - 1;
  auto out = torch::empty({n, values.size(1)}, values.options());
  AT_DISPATCH_FLOATING_TYPES(values.scalar_type(), "segment_sum", [&] {
    segment_sum_impl<scalar_t>(indptr.data_ptr<int64_t>(), pos.numel() ? pos.data_ptr<int64_t>() : nullptr,
                               values.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n, values.size(1));
  });
  return out;
}

void check_gat(const torch::Tensor& indptr, const torch::Tensor& indices, const torch::Tensor& el,
               const torch::Tensor& er, const torch::Tensor& w) {
  for (auto* t : {&indptr, &indices, &el, &er, &w}) check(*t, "every argument");
  TORCH_CHECK(indptr.scalar_type() == torch::kInt64 && indices.scalar_type() == torch::kInt64,
              "gat_softmax: indptr and indices must be int64");
  TORCH_CHECK(el.dim() == 2 && er.dim() == 2 && el.size(1) == er.size(1) && er.size(0) == indptr.size(0) - 1 &&
                  el.scalar_type() == er.scalar_type() &&
                  (w.numel() == 0 || (w.dim() == 2 && w.size(0) == indices.numel() && w.size(1) == el.size(1) &&
                                      w.scalar_type() == el.scalar_type())),
              "gat_softmax: el (N_src, H), er (N_dst, H) and w empty or (E, H), of one dtype");
}

// a (E, H): softmax over in-edges of LeakyReLU(el[u] + er[v] + (w[e] or c))
torch::Tensor gat_softmax(torch::Tensor indptr, torch::Tensor indices, torch::Tensor el, torch::Tensor er,
                          torch::Tensor w, double c, double slope) {
  check_gat(indptr, indices, el, er, w);
  const int64_t H = el.size(1);
  auto out = torch::empty({indices.numel(), H}, el.options());
  AT_DISPATCH_FLOATING_TYPES(el.scalar_type(), "gat_softmax", [&] {
    by_heads(H, [&](auto hw) {
      gat_softmax_impl<scalar_t, decltype(hw)::value>(indptr.data_ptr<int64_t>(), indices.data_ptr<int64_t>(),
          el.data_ptr<scalar_t>(), er.data_ptr<scalar_t>(), w.numel() ? w.data_ptr<scalar_t>() : nullptr,
          scalar_t(c), scalar_t(slope), out.data_ptr<scalar_t>(), er.size(0), H);
    });
  });
  return out;
}

// (gel, ger, gw) from a and its gradient g; each an empty tensor where not needed
std::vector<torch::Tensor> gat_softmax_backward(torch::Tensor indptr, torch::Tensor indices, torch::Tensor t_indptr,
                                                torch::Tensor t_pos, torch::Tensor el, torch::Tensor er,
                                                torch::Tensor w, double c, double slope, torch::Tensor a,
                                                torch::Tensor g, bool need_el, bool need_er, bool need_w) {
  check_gat(indptr, indices, el, er, w);
  for (auto* t : {&t_indptr, &t_pos, &a, &g}) check(*t, "every argument");
  TORCH_CHECK(a.sizes() == g.sizes() && a.dim() == 2 && a.size(0) == indices.numel() && a.size(1) == el.size(1) &&
                  t_indptr.size(0) == el.size(0) + 1 && t_pos.numel() == indices.numel(),
              "gat_softmax_backward: a and g must be (E, H) for the graph's E edges");
  const int64_t H = el.size(1);
  auto gt = torch::empty_like(a);
  auto ger = need_er ? torch::empty_like(er) : torch::empty({0}, er.options());
  auto gel = need_el ? torch::empty_like(el) : torch::empty({0}, el.options());
  AT_DISPATCH_FLOATING_TYPES(el.scalar_type(), "gat_softmax_backward", [&] {
    by_heads(H, [&](auto hw) {
      gat_softmax_backward_impl<scalar_t, decltype(hw)::value>(indptr.data_ptr<int64_t>(),
          indices.data_ptr<int64_t>(), el.data_ptr<scalar_t>(), er.data_ptr<scalar_t>(),
          w.numel() ? w.data_ptr<scalar_t>() : nullptr, scalar_t(c), scalar_t(slope), a.data_ptr<scalar_t>(),
          g.data_ptr<scalar_t>(), gt.data_ptr<scalar_t>(), need_er ? ger.data_ptr<scalar_t>() : nullptr,
          er.size(0), H);
    });
    if (need_el)
      segment_sum_impl<scalar_t>(t_indptr.data_ptr<int64_t>(), t_pos.data_ptr<int64_t>(), gt.data_ptr<scalar_t>(),
                                 gel.data_ptr<scalar_t>(), el.size(0), H);
  });
  return {gel, ger, need_w ? gt : torch::empty({0}, a.options())};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &re_aggregate_forward, "RE-GNN weighted aggregation, forward");
  m.def("backward", &re_aggregate_backward, "RE-GNN weighted aggregation, backward with the relation gradients");
  m.def("scales", &re_scales, "degree scales and their factors for the gradient");
  m.def("heads_forward", &heads_forward, "multi-head attention aggregation, forward");
  m.def("heads_backward", &heads_backward, "multi-head attention aggregation, gradients of z and the attention");
  m.def("v2_scores", &v2_scores, "GATv2 attention logits without the per-edge feature intermediate");
  m.def("v2_scores_backward", &v2_scores_backward, "GATv2 attention logits, gradients");
  m.def("gat_softmax", &gat_softmax, "GAT attention: LeakyReLU of the edge logits, softmax over in-edges");
  m.def("gat_softmax_backward", &gat_softmax_backward, "gat_softmax, gradients of el, er and the edge weights");
  m.def("edge_softmax", &edge_softmax, "softmax over every destination's in-edges");
  m.def("edge_softmax_backward", &edge_softmax_backward, "edge_softmax, gradient of the scores");
  m.def("hash_dropout", &hash_dropout, "dropout with a mask hashed from (seed, index); also its own backward");
  m.def("segment_sum", &segment_sum, "sums of per-edge rows per destination (CSR) or per source (CSC)");
}
