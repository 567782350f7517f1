/* The vocabulary head at scored nodes, fused: for each hidden state h (K floats) the logits
 * W h over the whole vocabulary are computed a cache-sized chunk at a time and reduced at once to
 * the row's log-sum-exp and the first index of its maximum, so the [nodes, vocab] logits never
 * reach memory (on a small model that traffic, and the separate log-softmax pass over it, were
 * most of the scoring time).
 *
 * Every value has one fixed order of IEEE float operations, whatever the vector width the
 * compiler picks and whatever the processor: products and sums are separate operations (built
 * with -ffp-contract=off, so no fused multiply-add), a logit is summed over k in order, exp is
 * this file's own polynomial, and the reductions run in a fixed lane order. A node's results
 * depend on its hidden state and the weights alone: not on the other nodes of the call, their
 * number, the thread that computes them, or the machine. */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32), aligned(32)));
typedef int32_t v8i __attribute__((vector_size(32), aligned(32)));
typedef uint32_t v8u __attribute__((vector_size(32), aligned(32)));
typedef float v8f_any __attribute__((vector_size(32), aligned(4))); /* a load from memory of any alignment */

#define LANES 8
#define GROUPS 3 /* vectors of vocabulary entries per micro-tile */
#define TILE (LANES * GROUPS) /* 24: the packed layout's tile (head_kernel.TILE) */
#define NODES 4 /* hidden states per micro-tile */
#define CHUNK (TILE * 64) /* the most vocabulary entries per chunk (chunk_entries) */
#define KBLOCK 32 /* k per partial sum of a logit */

static inline v8f splat(float x) { return (v8f){x, x, x, x, x, x, x, x}; }

/* exp(x) for x <= 0 (arguments are logit - max), Cephes' single-precision polynomial: about one
 * ulp. Arguments below -87.3 are raised to it (their exp, about 1e-38, adds nothing to a sum that
 * holds the maximum's 1); NaN stays NaN. The polynomial is evaluated in Estrin's order, which
 * keeps the dependency chain short. */
static inline v8f vexp(v8f x) {
  const v8f lo = splat(-87.3f);
  v8i low = lo > x;
  x = (v8f)(((v8i)lo & low) | ((v8i)x & ~low));
  const v8f magic = splat(12582912.0f); /* 1.5 * 2^23: adding and subtracting rounds to an integer */
  v8f n = (x * splat(1.44269504088896341f) + magic) - magic;
  v8f r = (x - n * splat(0.693359375f)) - n * splat(-2.12194440e-4f);
  v8f r2 = r * r;
  v8f r4 = r2 * r2;
  v8f p01 = splat(5.0000001201e-1f) + r * splat(1.6666665459e-1f);
  v8f p23 = splat(4.1665795894e-2f) + r * splat(8.3334519073e-3f);
  v8f p45 = splat(1.3981999507e-3f) + r * splat(1.9875691500e-4f);
  v8f p = (p01 + r2 * p23) + r4 * p45;
  p = (p * r2 + r) + splat(1.0f);
  v8u e = ((v8u)__builtin_convertvector(n, v8i) + 127u) << 23; /* unsigned: no overflow for NaN */
  return p * (v8f)e;
}

static inline v8f vmax(v8f a, v8f b) {
  v8i take = b > a;
  return (v8f)(((v8i)b & take) | ((v8i)a & ~take));
}

static inline float sexp(float x) {
  v8f v = vexp(splat(x));
  return v[0];
}

static inline float hmax(v8f v) {
  float m = v[0];
  for (int i = 1; i < LANES; i++) m = v[i] > m ? v[i] : m;
  return m;
}

static inline float hsum(v8f v) {
  /* a fixed pairwise order */
  float a = (v[0] + v[4]) + (v[2] + v[6]);
  float b = (v[1] + v[5]) + (v[3] + v[7]);
  return a + b;
}

/* Logits of `nodes` (<= NODES) hidden states over vocabulary entries [v0, v0 + len) of the packed
 * weights (v0 and len multiples of TILE) into out[i * CHUNK + (v - v0)]. A logit is summed in
 * blocks of KBLOCK consecutive k, each in order (a product, then a sum), and the blocks' sums are
 * added in order: a shorter chain of roundings than one sum over a wide model's k. */
static void logits_chunk(const float *packed, int64_t k_dim, const float *h, int nodes, int64_t v0, int64_t len,
                         float *out) {
  for (int64_t t = 0; t < len; t += TILE) {
    const float *w = packed + ((v0 + t) / TILE) * k_dim * TILE;
    for (int64_t k0 = 0; k0 < k_dim; k0 += KBLOCK) {
      int64_t k1 = k0 + KBLOCK < k_dim ? k0 + KBLOCK : k_dim;
      v8f acc[NODES][GROUPS];
      for (int i = 0; i < NODES; i++)
        for (int g = 0; g < GROUPS; g++) acc[i][g] = splat(0.0f);
      for (int64_t k = k0; k < k1; k++) {
        v8f wk[GROUPS];
        for (int g = 0; g < GROUPS; g++) wk[g] = *(const v8f_any *)(w + k * TILE + g * LANES);
        for (int i = 0; i < NODES; i++) {
          v8f x = splat(h[i * k_dim + k]);
          for (int g = 0; g < GROUPS; g++) acc[i][g] = acc[i][g] + x * wk[g];
        }
      }
      for (int i = 0; i < nodes; i++)
        for (int g = 0; g < GROUPS; g++) {
          v8f *o = (v8f *)(out + i * CHUNK + t + g * LANES);
          *o = k0 == 0 ? acc[i][g] : *o + acc[i][g];
        }
    }
  }
}

/* Vocabulary entries per chunk for hidden states of k_dim: a multiple of TILE whose weights
 * (chunk x k_dim floats) fit in a core's L2 cache beside the logits, so that every group of
 * NODES hidden states reuses them from there. It depends on k_dim alone: the order of a row's
 * reductions, and so its bits, is the same for every call. */
static int64_t chunk_entries(int64_t k_dim) {
  int64_t n = (65536 / k_dim) / TILE * TILE;
  return n < TILE ? TILE : (n > CHUNK ? CHUNK : n);
}

/* Per hidden state n in [n0, n1): lse[n], the log-sum-exp of its logits, and first[n], the first
 * index of their maximum. `packed` is the weight [vocab, k_dim] in tiles of TILE entries,
 * [padded / TILE][k_dim][TILE] (padded: vocab rounded up to TILE, the extra rows zero); h is
 * [*, k_dim], row-major. Chunks of the vocabulary in the outer loop, groups of NODES hidden
 * states in the inner one: a chunk's weights are read from memory once per call, not once per
 * group. Returns 0, or -1 out of memory. */
int proctor_head_stats(const float *packed, int64_t vocab, int64_t padded, int64_t k_dim, const float *h, int64_t n0,
                       int64_t n1, float *lse, int64_t *first) {
  int64_t count = n1 - n0, step = chunk_entries(k_dim);
  float *chunk = aligned_alloc(32, sizeof(float) * NODES * CHUNK);
  float *tail = aligned_alloc(32, sizeof(float) * NODES * ((k_dim + LANES - 1) / LANES * LANES));
  float *run_max = malloc(sizeof(float) * (count + 1)), *run_sum = malloc(sizeof(float) * (count + 1));
  int64_t *run_first = malloc(sizeof(int64_t) * (count + 1));
  int ok = chunk && tail && run_max && run_sum && run_first;
  if (ok) {
    for (int64_t i = 0; i < count; i++) run_max[i] = -INFINITY, run_sum[i] = 0.0f, run_first[i] = 0;
    int64_t whole = count / NODES * NODES;
    memset(tail, 0, sizeof(float) * NODES * k_dim); /* the last, partial group, padded with zeros */
    memcpy(tail, h + (n0 + whole) * k_dim, sizeof(float) * (count - whole) * k_dim);
    for (int64_t v0 = 0; v0 < padded; v0 += step) {
      int64_t len = padded - v0 < step ? padded - v0 : step;
      int64_t valid = vocab - v0 < len ? vocab - v0 : len;
      int64_t full = valid / LANES * LANES;
      for (int64_t g = 0; g < count; g += NODES) {
        int nodes = (int)(count - g < NODES ? count - g : NODES);
        logits_chunk(packed, k_dim, g < whole ? h + (n0 + g) * k_dim : tail, nodes, v0, len, chunk);
        for (int i = 0; i < nodes; i++) {
          const float *x = chunk + i * CHUNK;
          int64_t r = g + i;
          v8f vm = splat(-INFINITY);
          for (int64_t j = 0; j < full; j += LANES) vm = vmax(vm, *(const v8f *)(x + j));
          float m = hmax(vm);
          for (int64_t j = full; j < valid; j++) m = x[j] > m ? x[j] : m;
          v8f vs = splat(0.0f);
          const v8f vmx = splat(m);
          for (int64_t j = 0; j < full; j += LANES) vs = vs + vexp(*(const v8f *)(x + j) - vmx);
          float s = hsum(vs);
          for (int64_t j = full; j < valid; j++) s = s + sexp(x[j] - m);
          if (m > run_max[r]) { /* a new maximum: its first index is in this chunk */
            int64_t j = 0;
            while (j < valid && !(x[j] == m)) j++;
            run_first[r] = v0 + j;
            run_sum[r] = run_sum[r] * sexp(run_max[r] - m) + s;
            run_max[r] = m;
          } else if (m == m) {
            run_sum[r] = run_sum[r] + s * sexp(m - run_max[r]);
          } else { /* NaN logits: NaN log-probs, as a log-softmax gives */
            run_sum[r] = m;
          }
        }
      }
    }
    for (int64_t i = 0; i < count; i++) {
      lse[n0 + i] = run_max[i] + (float)log((double)run_sum[i]);
      first[n0 + i] = run_first[i];
    }
  }
  free(chunk);
  free(tail);
  free(run_max);
  free(run_sum);
  free(run_first);
  return ok ? 0 : -1;
}

/* proctor_head_stats over [0, count), split into `threads` contiguous ranges run by OpenMP
 * threads (built with OpenMP, the process's libgomp: the one PyTorch loaded, so its intra-op
 * threads do this work rather than spin beside it). Without OpenMP it returns -2 and does nothing;
 * the caller splits the range itself. */
int proctor_head_stats_threads(const float *packed, int64_t vocab, int64_t padded, int64_t k_dim, const float *h,
                               int64_t count, float *lse, int64_t *first, int threads) {
#ifdef _OPENMP
  int failed = 0;
  int64_t step = (count + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static, 1) reduction(| : failed)
  for (int t = 0; t < threads; t++) {
    int64_t start = t * step, end = start + step < count ? start + step : count;
    if (start < end) failed |= proctor_head_stats(packed, vocab, padded, k_dim, h, start, end, lse, first) != 0;
  }
  return failed ? -1 : 0;
#else
  (void)packed, (void)vocab, (void)padded, (void)k_dim, (void)h, (void)count, (void)lse, (void)first, (void)threads;
  return -2;
#endif
}

/* The logit of each (node, target) pair, summed in the same order as the chunks' (so equal to
 * the value the maximum was taken over), minus the node's log-sum-exp; hit[p] = 1 where the
 * target is the node's first maximum. `weight` is the plain [vocab, k_dim] weight. */
void proctor_head_targets(const float *weight, int64_t k_dim, const float *h, const float *lse, const int64_t *first,
                          const int64_t *rows, const int64_t *targets, int64_t pairs, float *logprob, float *hit) {
  for (int64_t p = 0; p < pairs; p++) {
    const float *w = weight + targets[p] * k_dim;
    const float *x = h + rows[p] * k_dim;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < k_dim; k0 += KBLOCK) {
      int64_t k1 = k0 + KBLOCK < k_dim ? k0 + KBLOCK : k_dim;
      float part = 0.0f;
      for (int64_t k = k0; k < k1; k++) part = part + x[k] * w[k];
      acc = k0 == 0 ? part : acc + part;
    }
    logprob[p] = acc - lse[rows[p]];
    hit[p] = first[rows[p]] == targets[p] ? 1.0f : 0.0f;
  }
}
