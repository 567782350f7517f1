/* The vocabulary head at scored nodes, fused: for each hidden state h (K floats) the logits
 * W h over the vocabulary are computed a cache-sized chunk of it at a time, with the row's running
 * maximum taken as they are made, then reduced to the log-sum-exp; the logits of a group of nodes at a
 * time are held in between, and never the [nodes, vocab] log-probs (on a small model that
 * traffic, and the separate passes over it, were most of the scoring time).
 *
 * It computes what PyTorch's CPU head computes, in the same order of IEEE operations, so that a
 * log-likelihood is the one lm-evaluation-harness gets from PyTorch (whose rounding it shares):
 *  - a logit as MKL's float32 GEMM computes it with AVX2 (read off its results on this project's
 *    machines, every bit at the widths tried): fused multiply-adds over k in order, in blocks of
 *    192 k (block_end), the blocks' sums added in order;
 *  - the log-softmax as ATen's AVX2 kernel does: the row's maximum M, then exp(logit - M) by
 *    SLEEF's expf_u10 algorithm, summed in 8 lanes in vocabulary order (entry i in lane i mod 8),
 *    the lanes added in a fixed tree, the log of the sum; a log-prob is (logit - M) - log(sum).
 * PyTorch's AVX-512 kernels round otherwise, and `order` follows them, its two parts apart: ATen's
 * AVX-512 log-softmax sums in 16 lanes, lane j + lane j + 8 first, then the tree above (the lanes
 * of `order`: 8 or 16); MKL's AVX-512 GEMM on Intel processors sums a logit's k in halves
 * (tile_halves; ORDER_HALVES in `order`), while on AMD processors, AVX-512 or not, MKL runs its
 * AVX2 kernels' blocks (read off both; the caller probes which one PyTorch computes).
 * That order is fixed here (by `order`, which the caller sets from what PyTorch computes), not chosen by the
 * processor: the bits are the same on every machine
 * (AVX2 and SSE2 builds are compared in the tests), and a node's values depend on its hidden state
 * and the weights alone, not on the other nodes of the call, their number, or the thread.
 * The logits' micro-tile is as wide as the build's vector registers (3 x 16 entries for 6 nodes
 * where AVX-512 is there, 3 x 8 for 4 otherwise), which changes no logit: each is its own chain. */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__FMA__) && defined(__AVX__)
#include <immintrin.h>
#endif

typedef float v8f __attribute__((vector_size(32), aligned(32)));
typedef int32_t v8i __attribute__((vector_size(32), aligned(32)));

#define LANES 8 /* the reductions' vectors (their lane orders are PyTorch's, whatever the build) */
/* The logits' micro-tile: GROUPS vectors of TILE_LANES vocabulary entries for NODES hidden states,
 * as wide as the build's registers (each logit is its own chain whatever the width: the same bits). */
#if defined(__AVX512F__)
#define TILE_LANES 16
#define NODES 6
typedef float vt __attribute__((vector_size(64), aligned(64)));
typedef float vt_any __attribute__((vector_size(64), aligned(4)));
typedef int32_t vti __attribute__((vector_size(64), aligned(64)));
#else
#define TILE_LANES 8
#define NODES 4
typedef float vt __attribute__((vector_size(32), aligned(32)));
typedef float vt_any __attribute__((vector_size(32), aligned(4)));
typedef int32_t vti __attribute__((vector_size(32), aligned(32)));
#endif
#define GROUPS 3 /* vectors of vocabulary entries per micro-tile */
#define TILE (TILE_LANES * GROUPS) /* the packed layout's tile (proctor_tile, read by head_kernel) */
#define CHUNK (TILE * 64) /* the most vocabulary entries per chunk (chunk_entries) */
#define KBLOCK 192 /* k per partial sum of a logit, as MKL's AVX2 GEMM blocks k */
#define KHALVES 384 /* the widest chain of a logit in MKL's AVX-512 GEMM (tile_halves) */
/* `order`: the sum's lanes (8 or 16) in its low byte, and this bit where a logit's k is summed in
 * halves (MKL's AVX-512 GEMM) rather than in blocks (its AVX2 one). */
#define ORDER_LANES(order) ((order) & 0xff)
#define ORDER_HALVES 0x100
/* The most nodes whose logits are held at a time, per thread: KEPT, or fewer where their logits
 * would pass KEPT_BYTES (128 x 49,152 floats is 25 MB; each group reads all the weights once, so
 * on a small model the larger group was faster, 64 -> 128 about 10% per node measured). */
#define KEPT 128
#define KEPT_BYTES ((int64_t)32 << 20)

static inline v8f splat(float x) { return (v8f){x, x, x, x, x, x, x, x}; }

/* a * b + c rounded once. Without the instruction, the C library's fmaf gives the same bits. */
static inline v8f vfma(v8f a, v8f b, v8f c) {
#if defined(__FMA__) && defined(__AVX__)
  return (v8f)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
  v8f r;
  for (int i = 0; i < LANES; i++) r[i] = fmaf(a[i], b[i], c[i]);
  return r;
#endif
}

/* The same for the micro-tile's vectors (without AVX-512 they are v8f). */
static inline vt tfma(vt a, vt b, vt c) {
#if defined(__AVX512F__)
  return (vt)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
  return vfma(a, b, c);
#endif
}

static inline v8f vselect(v8i take, v8f a, v8f b) { return (v8f)(((v8i)a & take) | ((v8i)b & ~take)); }

/* x in every lane of the micro-tile's vector (as a broadcast from memory: `(vt){0} + x` made the
 * compiler add the zero first, for the sign of -0.0, and broadcast from a register). */
#if defined(__AVX512F__)
static inline vt tsplat(float x) { return (vt){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
static inline vt tselect(vti take, vt a, vt b) { return (vt)(((vti)a & take) | ((vti)b & ~take)); }
#else
static inline vt tsplat(float x) { return splat(x); }
static inline vt tselect(vti take, vt a, vt b) { return vselect(take, a, b); }
#endif

/* exp(d), SLEEF's expf_u10 algorithm (what ATen's Vectorized<float>::exp computes with AVX2):
 * n = round(d / ln 2), the reduced argument by a two-part ln 2, a degree-6 polynomial by Horner's
 * rule in fused multiply-adds, and 2^n applied in two halves (each as a float's exponent field);
 * 0 below -104, NaN stays NaN. Lane by lane, so the same bits at every vector width: it is made
 * for 8 lanes (vexp) and, with AVX-512, for the micro-tile's 16 (texp). */
#define DEFINE_EXP(name, F, I, fma, select, spl)                                                  \
  static inline F name(F d) {                                                                    \
    const F magic = spl(12582912.0f); /* 1.5 * 2^23: adding and subtracting rounds to nearest even */ \
    F q = (d * spl(1.442695040888963407359924681001892137f) + magic) - magic;                     \
    I nan = d != d;                                                                              \
    I qi = __builtin_convertvector(select(nan, spl(0.0f), q), I);                                \
    F s = fma(q, spl(-0.693145751953125f), d);                                                   \
    s = fma(q, spl(-1.428606765330187045e-06f), s);                                              \
    F u = spl(0.000198527617612853646278381f);                                                   \
    u = fma(u, s, spl(0.00139304355252534151077271f));                                           \
    u = fma(u, s, spl(0.00833336077630519866943359f));                                           \
    u = fma(u, s, spl(0.0416664853692054748535156f));                                            \
    u = fma(u, s, spl(0.166666671633720397949219f));                                             \
    u = fma(u, s, spl(0.5f));                                                                    \
    u = spl(1.0f) + fma(s * s, u, s);                                                            \
    I half = qi >> 1;                                                                            \
    u = (u * (F)((half + 127) << 23)) * (F)((qi - half + 127) << 23);                            \
    u = select(d < spl(-104.0f), spl(0.0f), u);                                                  \
    return select(nan, d, u);                                                                    \
  }
DEFINE_EXP(vexp, v8f, v8i, vfma, vselect, splat)
#if defined(__AVX512F__)
DEFINE_EXP(texp, vt, vti, tfma, tselect, tsplat)
#endif

/* The end of the block of k that starts at k0: blocks of KBLOCK, except that a width between one
 * and two blocks is split in halves (as MKL does; for an odd such width its split is not this one,
 * and a logit can differ from MKL's in its last bit). */
static inline int64_t block_end(int64_t k0, int64_t k_dim) {
  int64_t step = k0 == 0 && KBLOCK < k_dim && k_dim < 2 * KBLOCK ? k_dim / 2 : KBLOCK;
  return k0 + step < k_dim ? k0 + step : k_dim;
}

/* One chain of fused multiply-adds over k in [k0, k1), from zero, into out (the accumulators
 * local, so that they stay in registers: through the pointer they went to memory at every k). */
static inline __attribute__((always_inline)) void tile_chain(const float *w, const float *h, int64_t k_dim,
                                                             int64_t k0, int64_t k1, vt out[NODES][GROUPS]) {
  vt acc[NODES][GROUPS];
  for (int i = 0; i < NODES; i++)
    for (int g = 0; g < GROUPS; g++) acc[i][g] = (vt){0};
  for (int64_t k = k0; k < k1; k++) {
    vt wk[GROUPS];
    for (int g = 0; g < GROUPS; g++) wk[g] = *(const vt_any *)(w + k * TILE + g * TILE_LANES);
    for (int i = 0; i < NODES; i++) {
      vt x = tsplat(h[i * k_dim + k]);
      for (int g = 0; g < GROUPS; g++) acc[i][g] = tfma(x, wk[g], acc[i][g]);
    }
  }
  for (int i = 0; i < NODES; i++)
    for (int g = 0; g < GROUPS; g++) out[i][g] = acc[i][g];
}

/* One micro-tile's logits over k in [k0, k1) as MKL's AVX-512 GEMM sums them (read off its
 * results at widths 64 to 1,536): a chain of fused multiply-adds where the width is at most
 * KHALVES, else the two halves (the first one the larger) each so, then added. */
static void tile_halves(const float *w, const float *h, int64_t k_dim, int64_t k0, int64_t k1,
                        vt acc[NODES][GROUPS]) {
  if (k1 - k0 > KHALVES) {
    int64_t mid = k0 + (k1 - k0 + 1) / 2;
    vt right[NODES][GROUPS];
    tile_halves(w, h, k_dim, k0, mid, acc);
    tile_halves(w, h, k_dim, mid, k1, right);
    for (int i = 0; i < NODES; i++)
      for (int g = 0; g < GROUPS; g++) acc[i][g] = acc[i][g] + right[i][g];
    return;
  }
  tile_chain(w, h, k_dim, k0, k1, acc);
}

/* The same for one logit (w and x of k_dim floats, plain). */
static float dot_halves(const float *w, const float *x, int64_t k0, int64_t k1) {
  if (k1 - k0 > KHALVES) {
    int64_t mid = k0 + (k1 - k0 + 1) / 2;
    float left = dot_halves(w, x, k0, mid);
    return left + dot_halves(w, x, mid, k1);
  }
  float part = 0.0f;
  for (int64_t k = k0; k < k1; k++) part = fmaf(x[k], w[k], part);
  return part;
}

/* One logit in MKL's AVX2 order (logits_chunk's): per block of k a chain from zero, added in order. */
static float dot_blocks(const float *w, const float *x, int64_t k_dim) {
  float acc = 0.0f;
  for (int64_t k0 = 0, k1; k0 < k_dim; k0 = k1) {
    k1 = block_end(k0, k_dim);
    float part = 0.0f;
    for (int64_t k = k0; k < k1; k++) part = fmaf(x[k], w[k], part);
    acc = k0 == 0 ? part : acc + part;
  }
  return acc;
}

/* A vector of logits into the held block (aligned to its width: rows of whole tiles in a 64-byte
 * aligned buffer), past the caches where the instruction is there: the block is larger than a
 * core's L2 cache and is read once, later, by row_sum, so caching the lines on the way only made
 * the processor read each one first (sfence_logits orders them before that read). */
static inline void store_logits(float *p, vt v) {
#if defined(__AVX512F__)
  _mm512_stream_ps(p, (__m512)v);
#elif defined(__FMA__) && defined(__AVX__)
  _mm256_stream_ps(p, (__m256)v);
#else
  *(vt_any *)p = v;
#endif
}

static inline void sfence_logits(void) {
#if defined(__FMA__) && defined(__AVX__)
  _mm_sfence();
#endif
}

/* The running maximum of a node's logits in whole vectors of a chunk (v > max selects it, NaN
 * is noted apart), taken as they are made, while they are in registers or the L1 cache. */
typedef struct {
  vt max;
  vti nan;
} running_max;

static inline void take_max(running_max *m, vt v) {
  m->nan |= v != v;
  m->max = tselect(v > m->max, v, m->max);
}

/* Logits of `nodes` (<= NODES) hidden states over vocabulary entries [v0, v0 + len) of the packed
 * weights (v0 and len multiples of TILE) into out[i * stride + (v - v0)]: per block of k
 * (block_end) a chain of fused multiply-adds from zero, the blocks' sums added in order. The
 * vectors wholly below `valid` (entries of the chunk that are in the vocabulary) go into max[i]. */
static void logits_chunk(const float *packed, int64_t k_dim, const float *h, int nodes, int64_t v0, int64_t len,
                         int64_t valid, float *out, int64_t stride, int order, running_max max[NODES]) {
  for (int64_t t = 0; t < len; t += TILE) {
    const float *w = packed + ((v0 + t) / TILE) * k_dim * TILE;
    vt acc[NODES][GROUPS];
    if (order & ORDER_HALVES) {
      tile_halves(w, h, k_dim, 0, k_dim, acc);
    } else {
      for (int64_t k0 = 0, k1; k0 < k_dim; k0 = k1) {
        k1 = block_end(k0, k_dim);
        vt part[NODES][GROUPS];
        tile_chain(w, h, k_dim, k0, k1, part);
        for (int i = 0; i < NODES; i++)
          for (int g = 0; g < GROUPS; g++) acc[i][g] = k0 == 0 ? part[i][g] : acc[i][g] + part[i][g];
      }
    }
    for (int i = 0; i < nodes; i++)
      for (int g = 0; g < GROUPS; g++) {
        store_logits(out + i * stride + t + g * TILE_LANES, acc[i][g]);
        if (t + (g + 1) * TILE_LANES <= valid) take_max(&max[i], acc[i][g]);
      }
  }
}

/* Vocabulary entries per chunk for hidden states of k_dim: a multiple of TILE whose weights
 * (chunk x k_dim floats) fit in a core's L2 cache beside the logits, so that every group of
 * NODES hidden states reuses them from there. (The order of a row's reductions does not depend
 * on it: the lanes run over the whole vocabulary.) */
static int64_t chunk_entries(int64_t k_dim) {
  int64_t n = (65536 / k_dim) / TILE * TILE;
  return n < TILE ? TILE : (n > CHUNK ? CHUNK : n);
}

/* A chunk's maximum into the row's (*max, *first): the running maximum m of its whole vectors, the
 * entries from `covered` to `valid` one by one; the first entry above *max (or the first NaN, after
 * which the row is NaN) moves it and *first (x: the chunk's logits, from vocabulary entry v0). */
static void chunk_max(const float *x, int64_t covered, int64_t valid, running_max m, int64_t v0, float *max,
                      int64_t *first) {
  float c = m.max[0];
  int any_nan = 0;
  for (int l = 0; l < TILE_LANES; l++) c = m.max[l] > c ? m.max[l] : c, any_nan |= m.nan[l];
  for (int64_t j = covered; j < valid; j++) c = x[j] > c ? x[j] : c, any_nan |= x[j] != x[j];
  if (any_nan || c > *max) { /* where it is: the first NaN, else the first entry equal to it */
    int64_t j = 0;
    while (any_nan ? x[j] == x[j] : !(x[j] == c)) j++;
    *max = x[j], *first = v0 + j;
  }
}

/* The sum of exp(x[j] - max) over one row's logits x[0 .. vocab), as ATen's AVX2 log-softmax adds
 * them: entry j into lane j mod 8, in order, then the lanes in a fixed tree (a row shorter than
 * the lanes: lane by lane). */
static float row_sum(const float *x, int64_t vocab, float max, int lanes) {
  int64_t full = vocab / lanes * lanes;
  const v8f vm = splat(max);
  v8f v[2] = {splat(0.0f), splat(0.0f)}; /* lanes 0-7 and (16 lanes) 8-15 */
#if defined(__AVX512F__)
  if (lanes == 16) { /* the same lanes in one register */
    vt wide = tsplat(0.0f);
    for (int64_t j = 0; j < full; j += 16) wide = wide + texp(*(const vt_any *)(x + j) - tsplat(max));
    memcpy(v, &wide, sizeof wide);
  } else
#endif
    for (int64_t j = 0; j < full; j += lanes)
      for (int u = 0; u < lanes / LANES; u++) v[u] = v[u] + vexp(*(const v8f *)(x + j + u * LANES) - vm);
  for (int64_t j = 0; j < vocab - full; j++) { /* the last entries: lanes 0 .. vocab - full - 1 */
    v8f last = vexp(*(const v8f *)(x + full + j / LANES * LANES) - vm);
    v[j / LANES][j % LANES] = v[j / LANES][j % LANES] + last[j % LANES];
  }
  if (vocab < lanes) {
    float s = v[0][0];
    for (int64_t j = 1; j < vocab; j++) s = s + v[j / LANES][j % LANES];
    return s;
  }
  v8f w = lanes == 16 ? v[0] + v[1] : v[0]; /* 16 lanes: lane j + lane j + 8 first */
  return ((w[0] + w[4]) + (w[2] + w[6])) + ((w[1] + w[5]) + (w[3] + w[7])); /* halves, pairs, neighbours */
}

/* The statistics of nodes [n0, n0 + count), count <= a group: their logits into `logits`
 * ([count][padded]) with the running maxima, chunks of the vocabulary in the outer loop and groups
 * of NODES hidden states in the inner one (a chunk's weights are read from memory once, not once
 * per group); then each row's sum relative to its maximum. */
static void stats_range(const float *packed, int64_t vocab, int64_t padded, int64_t k_dim, const float *h, int64_t n0,
                        int64_t count, float *maxima, float *logsums, int64_t *first, float *tail, float *logits,
                        int order) {
  int64_t step = chunk_entries(k_dim), whole = count / NODES * NODES;
  for (int64_t i = 0; i < count; i++) maxima[n0 + i] = -INFINITY, first[n0 + i] = 0;
  memset(tail, 0, sizeof(float) * NODES * k_dim); /* the last, partial group, padded with zeros */
  memcpy(tail, h + (n0 + whole) * k_dim, sizeof(float) * (count - whole) * k_dim);
  for (int64_t v0 = 0; v0 < padded; v0 += step) {
    int64_t len = padded - v0 < step ? padded - v0 : step;
    int64_t valid = vocab - v0 < len ? vocab - v0 : len;
    for (int64_t g = 0; g < count; g += NODES) {
      int nodes = (int)(count - g < NODES ? count - g : NODES);
      float *out = logits + g * padded + v0;
      running_max max[NODES];
      for (int i = 0; i < NODES; i++) max[i] = (running_max){tsplat(-INFINITY), (vti){0}};
      logits_chunk(packed, k_dim, g < whole ? h + (n0 + g) * k_dim : tail, nodes, v0, len, valid, out, padded, order,
                   max);
      for (int i = 0; i < nodes; i++)
        if (maxima[n0 + g + i] == maxima[n0 + g + i]) /* after a NaN logit the row is NaN */
          chunk_max(out + i * padded, valid / TILE_LANES * TILE_LANES, valid, max[i], v0, &maxima[n0 + g + i],
                    &first[n0 + g + i]);
    }
  }
  sfence_logits();
  for (int64_t i = 0; i < count; i++) {
    float m = maxima[n0 + i];
    logsums[n0 + i] = m == m ? (float)log((double)row_sum(logits + i * padded, vocab, m, ORDER_LANES(order))) : m;
  }
}

/* n bytes rounded up to a multiple of 64: aligned_alloc may refuse a size that is not a multiple
 * of the alignment (macOS's does). */
static size_t bytes64(size_t n) { return (n + 63) / 64 * 64; }

/* Per hidden state n in [n0, n1): maxima[n], the maximum of its logits (NaN if one is NaN),
 * first[n], the first index of it (of the first NaN: as argmax), and logsums[n], the log of the
 * sum of exp(logit - maximum). `packed` is the weight [vocab, k_dim] in tiles of TILE entries,
 * [padded / TILE][k_dim][TILE] (padded: vocab rounded up to TILE, the extra rows zero); h is
 * [*, k_dim], row-major. The sums need the maximum first, so the logits of a group of nodes at a time
 * are held (computing them twice instead was slower at every width measured, 64 to 960).
 * Returns 0, or -1 out of memory. */
int proctor_head_stats(const float *packed, int64_t vocab, int64_t padded, int64_t k_dim, const float *h, int64_t n0,
                       int64_t n1, float *maxima, float *logsums, int64_t *first, int order) {
  /* groups of at most `kept` nodes, as even as whole micro-tiles make them (each group reads all the
   * weights once: a last group of a few nodes cost nearly as much as a full one) */
  int64_t kept = KEPT_BYTES / ((int64_t)sizeof(float) * padded) / NODES * NODES;
  kept = kept < NODES ? NODES : (kept > KEPT ? KEPT : kept);
  int64_t groups = n1 > n0 ? (n1 - n0 + kept - 1) / kept : 1;
  int64_t group = ((n1 - n0 + groups - 1) / groups + NODES - 1) / NODES * NODES;
  float *tail = aligned_alloc(64, bytes64(sizeof(float) * NODES * k_dim));
  float *logits = aligned_alloc(64, bytes64(sizeof(float) * (group + 1) * padded));
  int ok = tail && logits;
  for (int64_t start = n0; ok && start < n1; start += group) {
    int64_t end = start + group < n1 ? start + group : n1;
    stats_range(packed, vocab, padded, k_dim, h, start, end - start, maxima, logsums, first, tail, logits, order);
  }
  free(tail);
  free(logits);
  return ok ? 0 : -1;
}

/* proctor_head_stats over [0, count), split into `threads` contiguous ranges run by OpenMP
 * threads (built with OpenMP, the process's libgomp: the one PyTorch loaded, so its intra-op
 * threads do this work rather than spin beside it). Without OpenMP it returns -2 and does nothing;
 * the caller splits the range itself. */
int proctor_head_stats_threads(const float *packed, int64_t vocab, int64_t padded, int64_t k_dim, const float *h,
                               int64_t count, float *maxima, float *logsums, int64_t *first, int order,
                               int threads) {
#ifdef _OPENMP
  int failed = 0;
  int64_t step = (count + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static, 1) reduction(| : failed)
  for (int t = 0; t < threads; t++) {
    int64_t start = t * step, end = start + step < count ? start + step : count;
    if (start < end)
      failed |= proctor_head_stats(packed, vocab, padded, k_dim, h, start, end, maxima, logsums, first, order) != 0;
  }
  return failed ? -1 : 0;
#else
  (void)packed, (void)vocab, (void)padded, (void)k_dim, (void)h, (void)count, (void)maxima, (void)logsums;
  (void)first, (void)order, (void)threads;
  return -2;
#endif
}

/* The logit of each (node, target) pair, in the chunks' order of operations (so equal to the
 * value the maximum was taken over), as a log-prob: (logit - maximum) - log-sum; hit[p] = 1 where
 * the target is the node's first maximum. `weight` is the plain [vocab, k_dim] weight. */
void proctor_head_targets(const float *weight, int64_t k_dim, const float *h, const float *maxima,
                          const float *logsums, const int64_t *first, const int64_t *rows, const int64_t *targets,
                          int64_t pairs, float *logprob, float *hit, int order) {
  for (int64_t p = 0; p < pairs; p++) {
    const float *w = weight + targets[p] * k_dim;
    const float *x = h + rows[p] * k_dim;
    float acc = order & ORDER_HALVES ? dot_halves(w, x, 0, k_dim) : dot_blocks(w, x, k_dim);
    logprob[p] = (acc - maxima[rows[p]]) - logsums[rows[p]];
    hit[p] = first[rows[p]] == targets[p] ? 1.0f : 0.0f;
  }
}

/* The packed layout's tile (vocabulary entries per micro-tile), which this build reads. */
int proctor_tile(void) { return TILE; }
