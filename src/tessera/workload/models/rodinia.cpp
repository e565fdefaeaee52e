// Rodinia-like kernels. Launch shapes (block size, grid, shared memory) copy the CUDA versions in
// Rodinia 3.1 (the source files named beside each kernel); FLOPs and bytes per block are counted
// from the algorithm: FLOPs are the arithmetic (and, for the integer kernels, compare and add)
// operations of the cells a block updates; bytes are the DRAM reads and writes of those cells,
// halo re-reads excluded (they hit L2). Registers per thread are not in the sources; 32 is an
// ASSUMPTION for these simple kernels (it only matters for occupancy, and 32 x 1024 threads
// fits every catalog GPU).

#include "tessera/workload/models/rodinia.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace tessera::workload {

namespace {

constexpr std::int64_t kFloat = 4;  // sizeof(float), sizeof(int) in the CUDA sources
constexpr int kRegisters = 32;      // ASSUMPTION, see above
constexpr int kTile = 16;           // BLOCK_SIZE of hotspot, srad, lud and nw

std::int64_t at_least(std::int64_t size, std::int64_t min) {
  return std::max(size, min);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

Kernel make_kernel(std::string_view name, KernelClass kind, std::int64_t blocks, int threads,
                   std::int64_t shared_bytes, double flops_per_block, double bytes_per_block,
                   bool block_independent = true) {
  return Kernel{
      .name = name,
      .kind = kind,
      .pipe = ComputePipe::kFp32,
      .blocks = std::max<std::int64_t>(blocks, 1),
      .block = BlockResources{.threads = threads,
                              .registers_per_thread = kRegisters,
                              .shared_memory_bytes = shared_bytes},
      .flops_per_block = flops_per_block,
      .bytes_per_block = bytes_per_block,
      .block_independent = block_independent,
  };
}

KernelSequence one_group(std::vector<Kernel> kernels, int repeat = 1) {
  KernelSequence seq;
  seq.groups.push_back(KernelGroup{.kernels = std::move(kernels), .repeat = repeat});
  return seq;
}

// --- hotspot (hotspot/hotspot.cu): thermal simulation, a 5-point stencil on an N x N grid. ---
// One iteration is one time step, one launch of calculate_temp with pyramid_height 1: 16 x 16
// threads load a tile with its halo and update the inner (16 - 2) x (16 - 2) cells
// (EXPAND_RATE 2), so the grid is ceil(N / 14)^2 blocks. Per cell: about 15 FLOPs (the update
// T + step/Cap x (P + (N + S - 2T) / Ry + (E + W - 2T) / Rx + (amb - T) / Rz)); reads temperature
// and power, writes temperature (12 bytes). Shared memory: temp, power and result tiles.
constexpr std::int64_t kHotspotInner = kTile - 2;
constexpr double kHotspotFlopsPerCell = 15;

KernelSequence hotspot_iteration(std::int64_t size) {
  const std::int64_t n = at_least(size, kTile);
  const std::int64_t side = ceil_div(n, kHotspotInner);
  const double cells = static_cast<double>(kHotspotInner * kHotspotInner);
  return one_group(
      {make_kernel("hotspot_calculate_temp", KernelClass::kOther, side * side, kTile * kTile,
                   3 * kTile * kTile * kFloat, kHotspotFlopsPerCell * cells, 3 * kFloat * cells)});
}

// MatrixTemp[2] and MatrixPower: three N x N float arrays.
std::int64_t hotspot_footprint(std::int64_t size) {
  const std::int64_t n = at_least(size, kTile);
  return 3 * n * n * kFloat;
}

// --- srad (srad_v2/srad_kernel.cu): speckle-reducing anisotropic diffusion on an N x N image. ---
// Two launches per iteration over (N / 16)^2 blocks of 16 x 16 threads. srad_cuda_1 computes the
// four directional derivatives and the diffusion coefficient (about 35 FLOPs per pixel, a
// division and the q^2 statistic included), reading J and writing dN, dS, dW, dE and c
// (24 bytes). srad_cuda_2 applies the divergence (about 12 FLOPs), reading c, the four
// derivatives and J and writing J (28 bytes). Shared memory: six and five 16 x 16 float tiles.
KernelSequence srad_iteration(std::int64_t size) {
  const std::int64_t n = at_least(size, kTile);
  const std::int64_t side = ceil_div(n, kTile);
  const double cells = static_cast<double>(kTile * kTile);
  const int threads = kTile * kTile;
  const std::int64_t tile = kTile * kTile * kFloat;
  return one_group({
      make_kernel("srad_cuda_1", KernelClass::kOther, side * side, threads, 6 * tile, 35 * cells,
                  6 * kFloat * cells),
      make_kernel("srad_cuda_2", KernelClass::kOther, side * side, threads, 5 * tile, 12 * cells,
                  7 * kFloat * cells),
  });
}

// J, C, E, W, N, S: six N x N float arrays.
std::int64_t srad_footprint(std::int64_t size) {
  const std::int64_t n = at_least(size, kTile);
  return 6 * n * n * kFloat;
}

// --- pathfinder (pathfinder/pathfinder.cu): dynamic programming down a rows x cols grid. ---
// Size = columns. ASSUMPTION: 100 rows and pyramid height 20, the values of Rodinia's run script
// (`pathfinder 100000 100 20`). One iteration is one pass down the grid: ceil(99 / 20) = 5
// launches of dynproc_kernel, each of ceil(cols / (256 - 2 x 20)) blocks of 256 threads that
// advance 20 rows. Per block and row: 256 cells of min-of-three plus add (3 integer operations,
// counted as FLOPs) and 216 wall values read; plus the previous row in and the result out.
constexpr std::int64_t kPathRows = 100;
constexpr std::int64_t kPathPyramid = 20;
constexpr int kPathThreads = 256;

KernelSequence pathfinder_iteration(std::int64_t size) {
  const std::int64_t cols = at_least(size, 1);
  const std::int64_t useful = kPathThreads - 2 * kPathPyramid;
  const std::int64_t blocks = ceil_div(cols, useful);
  const std::int64_t launches = ceil_div(kPathRows - 1, kPathPyramid);
  const double flops = 3.0 * kPathThreads * kPathPyramid;
  const double bytes =
      static_cast<double>(kPathPyramid * useful * kFloat + kPathThreads * kFloat + useful * kFloat);
  return one_group({make_kernel("pathfinder_dynproc", KernelClass::kOther, blocks, kPathThreads,
                                2 * kPathThreads * kFloat, flops, bytes)},
                   static_cast<int>(launches));
}

// gpuWall ((rows - 1) x cols ints) and gpuResult[2] (2 x cols ints).
std::int64_t pathfinder_footprint(std::int64_t size) {
  const std::int64_t cols = at_least(size, 1);
  return (kPathRows + 1) * cols * kFloat;
}

// --- lud (lud/cuda/lud_kernel.cu): blocked LU decomposition of an N x N matrix, 16 x 16 tiles. ---
// One iteration is one whole factorization. With m = N / 16 tiles per side, step i launches
// lud_diagonal (one block: LU of the diagonal tile, 2/3 x 16^3 FLOPs; it works alone on the
// tile, so not block-independent), lud_perimeter (m - i - 1 blocks of 32 threads, each solving a
// row tile and a column tile against the diagonal: 2 x 16^3 FLOPs, 5 tiles moved) and
// lud_internal ((m - i - 1)^2 blocks of 16 x 16 threads, each a tile update A -= L U:
// 2 x 16^3 FLOPs, 4 tiles moved); the last step is the diagonal alone.
KernelSequence lud_iteration(std::int64_t size) {
  const std::int64_t m = ceil_div(at_least(size, kTile), kTile);
  const double tile_bytes = static_cast<double>(kTile * kTile * kFloat);
  const double tile_cube = static_cast<double>(kTile * kTile * kTile);
  std::vector<Kernel> kernels;
  kernels.reserve(static_cast<std::size_t>(3 * m));
  for (std::int64_t i = 0; i < m; ++i) {
    kernels.push_back(make_kernel("lud_diagonal", KernelClass::kOther, 1, kTile,
                                  kTile * kTile * kFloat, 2.0 / 3.0 * tile_cube, 2 * tile_bytes,
                                  /*block_independent=*/false));
    const std::int64_t rest = m - i - 1;
    if (rest == 0) break;
    kernels.push_back(make_kernel("lud_perimeter", KernelClass::kOther, rest, 2 * kTile,
                                  3 * kTile * kTile * kFloat, 2 * tile_cube, 5 * tile_bytes));
    kernels.push_back(make_kernel("lud_internal", KernelClass::kOther, rest * rest, kTile * kTile,
                                  2 * kTile * kTile * kFloat, 2 * tile_cube, 4 * tile_bytes));
  }
  return one_group(std::move(kernels));
}

// d_m: one N x N float matrix.
std::int64_t lud_footprint(std::int64_t size) {
  const std::int64_t n = ceil_div(at_least(size, kTile), kTile) * kTile;
  return n * n * kFloat;
}

// --- bfs (bfs/bfs.cu): breadth-first search over a graph of N nodes. ---
// ASSUMPTION: a random graph of mean degree 6 (Rodinia's graph1MW_6 input) whose traversal
// takes L = ceil(ln N / ln 6) + 1 levels (the depth of such a graph), each node in the
// frontier at exactly one level. One iteration is one traversal: L x (Kernel, Kernel2), each
// over ceil(N / 512) blocks of 512 threads (MAX_THREADS_PER_BLOCK). Per level, Kernel reads
// every node's mask byte, and for its frontier share (N / L nodes) the node record (8 bytes),
// six edges (4 bytes each), their visited flags and costs (5 bytes each) and writes the
// neighbours' costs and update flags; 2 operations per edge. Kernel2 reads every update flag
// and, for the N / L updated nodes, writes mask, visited and the stop flag.
constexpr std::int64_t kBfsDegree = 6;
constexpr int kBfsThreads = 512;

int bfs_levels(std::int64_t nodes) {
  return static_cast<int>(std::ceil(std::log(static_cast<double>(nodes)) /
                                    std::log(static_cast<double>(kBfsDegree)))) +
         1;
}

KernelSequence bfs_iteration(std::int64_t size) {
  const std::int64_t n = at_least(size, 2);
  const int levels = bfs_levels(n);
  const std::int64_t blocks = ceil_div(n, kBfsThreads);
  const double frontier = static_cast<double>(n) / levels;
  const double k1_bytes =
      static_cast<double>(n) + frontier * static_cast<double>(8 + kBfsDegree * (4 + 5) + 5 * 1);
  const double k2_bytes = static_cast<double>(n) + frontier * 3;
  const double k1_flops = frontier * 2 * kBfsDegree;
  const double k2_flops = static_cast<double>(n);
  const auto b = static_cast<double>(blocks);
  return one_group({make_kernel("bfs_kernel", KernelClass::kOther, blocks, kBfsThreads, 0,
                                k1_flops / b, k1_bytes / b),
                    make_kernel("bfs_kernel2", KernelClass::kOther, blocks, kBfsThreads, 0,
                                k2_flops / b, k2_bytes / b)},
                   levels);
}

// d_graph_nodes (8 bytes a node), d_graph_edges (4 bytes an edge, 6 edges a node), three flag
// arrays (1 byte a node) and d_cost (4 bytes a node): 39 bytes a node.
std::int64_t bfs_footprint(std::int64_t size) {
  const std::int64_t n = at_least(size, 2);
  return n * (8 + 3 + 4 + kBfsDegree * 4);
}

// --- kmeans (kmeans/kmeans_cuda.cu): one k-means step over N points. ---
// ASSUMPTION: 34 features and 5 clusters (Rodinia's kdd_cup input and default minimum cluster
// count). kmeansPoint: ceil(N / 256) blocks of 256 threads, one point each: the distance to
// every center (3 FLOPs per feature and cluster) and the argmin (one compare a cluster), the
// point's features read (34 floats, centers come from constant memory) and its membership
// written; with BLOCK_CENTER_REDUCE the block's partial center sums (1 add per feature) go out
// as one k x 34 float tile per block.
constexpr std::int64_t kKmeansFeatures = 34;
constexpr std::int64_t kKmeansClusters = 5;
constexpr int kKmeansThreads = 256;

KernelSequence kmeans_iteration(std::int64_t size) {
  const std::int64_t n = at_least(size, 1);
  const std::int64_t blocks = ceil_div(n, kKmeansThreads);
  const double per_point_flops = static_cast<double>(3 * kKmeansFeatures * kKmeansClusters +
                                                     kKmeansClusters + kKmeansFeatures);
  const double per_point_bytes = static_cast<double>((kKmeansFeatures + 1) * kFloat);
  const double centers = static_cast<double>(kKmeansClusters * kKmeansFeatures * kFloat);
  return one_group(
      {make_kernel("kmeans_point", KernelClass::kReduction, blocks, kKmeansThreads,
                   kKmeansClusters * kKmeansFeatures * kFloat, per_point_flops * kKmeansThreads,
                   per_point_bytes * kKmeansThreads + centers)});
}

// feature_d and feature_flipped_d (N x 34 floats each), membership_d (N ints), clusters_d
// (5 x 34 floats) and the per-block center sums.
std::int64_t kmeans_footprint(std::int64_t size) {
  const std::int64_t n = at_least(size, 1);
  const std::int64_t blocks = ceil_div(n, kKmeansThreads);
  return (2 * n * kKmeansFeatures + n + (blocks + 1) * kKmeansClusters * kKmeansFeatures) * kFloat;
}

// --- backprop (backprop/backprop_cuda_kernel.cu): one training step of a 3-layer network. ---
// Size = input units; 16 hidden units and 1 output (the Rodinia code's fixed shape). Both
// kernels run N / 16 blocks of 16 x 16 threads, one block per 16 inputs x 16 hidden weights.
// bpnn_layerforward: a multiply and a tree-reduction add per weight (512 FLOPs a block), the
// 16 x 16 weights and 16 inputs read, 16 partial sums written. bpnn_adjust_weights: per weight
// 6 FLOPs (eta x delta x y + momentum x old, two adds, a copy); reads and writes the weight and
// its previous change (16 bytes).
constexpr std::int64_t kBpHidden = 16;

KernelSequence backprop_iteration(std::int64_t size) {
  const std::int64_t n = at_least(size, kBpHidden);
  const std::int64_t blocks = ceil_div(n, kBpHidden);
  const double weights = static_cast<double>(kBpHidden * kBpHidden);
  const int threads = static_cast<int>(kBpHidden * kBpHidden);
  return one_group({
      make_kernel("bpnn_layerforward", KernelClass::kGemm, blocks, threads,
                  (kBpHidden + kBpHidden * kBpHidden) * kFloat, 2 * weights,
                  (weights + 2 * kBpHidden) * kFloat),
      make_kernel("bpnn_adjust_weights", KernelClass::kOptimizer, blocks, threads, 0, 6 * weights,
                  (4 * weights + 2 * kBpHidden) * kFloat),
  });
}

// input_cuda (N + 1 floats), input_hidden_cuda and input_prev_weights_cuda ((N + 1) x 17 floats
// each), hidden_partial_sum (N / 16 blocks x 16 floats) and the small hidden-layer arrays.
std::int64_t backprop_footprint(std::int64_t size) {
  const std::int64_t n = at_least(size, kBpHidden);
  const std::int64_t blocks = ceil_div(n, kBpHidden);
  return ((n + 1) * (1 + 2 * (kBpHidden + 1)) + blocks * kBpHidden + 2 * (kBpHidden + 1)) * kFloat;
}

// --- nw (nw/needle_kernel.cu): Needleman-Wunsch alignment of two length-N sequences. ---
// The (N + 1)^2 score matrix is filled in 16 x 16 tiles along anti-diagonals: with b = N / 16,
// needle_cuda_shared_1 runs for i = 1..b with i blocks and needle_cuda_shared_2 for
// i = b - 1..1 with i blocks, 16 threads each. Per tile: 256 cells of three adds and two maxes
// (5 integer operations, counted as FLOPs); the reference tile read, the boundary row and column
// (33 ints) read, the tile written. Shared memory: a 17 x 17 score tile and a 16 x 16 reference
// tile (ints). One iteration is one alignment.
KernelSequence nw_iteration(std::int64_t size) {
  const std::int64_t b = ceil_div(at_least(size, kTile), kTile);
  const double cells = static_cast<double>(kTile * kTile);
  const double bytes = (2 * cells + 2 * kTile + 1) * kFloat;
  const std::int64_t smem = ((kTile + 1) * (kTile + 1) + kTile * kTile) * kFloat;
  std::vector<Kernel> kernels;
  kernels.reserve(static_cast<std::size_t>(2 * b));
  for (std::int64_t i = 1; i <= b; ++i) {
    kernels.push_back(
        make_kernel("nw_needle_1", KernelClass::kOther, i, kTile, smem, 5 * cells, bytes));
  }
  for (std::int64_t i = b - 1; i >= 1; --i) {
    kernels.push_back(
        make_kernel("nw_needle_2", KernelClass::kOther, i, kTile, smem, 5 * cells, bytes));
  }
  return one_group(std::move(kernels));
}

// referrence_cuda and matrix_cuda: two (N + 1)^2 int matrices.
std::int64_t nw_footprint(std::int64_t size) {
  const std::int64_t n = ceil_div(at_least(size, kTile), kTile) * kTile + 1;
  return 2 * n * n * kFloat;
}

std::vector<ScientificKernel> build_catalog() {
  // Default sizes: ASSUMPTION, chosen so the footprints spread over 0.25-1.5 GiB (a 1g slice
  // holds any of them alone); max sizes keep block counts and bytes inside int64 and the kernel
  // counts of lud and nw (2 N / 16) manageable.
  return {
      {"hotspot", "thermal simulation, 2D 5-point stencil (one time step)", "grid side (cells)",
       hotspot_iteration, hotspot_footprint, 8192, kTile, 1 << 17},
      {"srad", "speckle-reducing anisotropic diffusion, two 2D stencil kernels",
       "image side (pixels)", srad_iteration, srad_footprint, 8192, kTile, 1 << 17},
      {"pathfinder", "dynamic programming down 100 rows, pyramid height 20", "columns",
       pathfinder_iteration, pathfinder_footprint, 1'000'000, 1, std::int64_t{1} << 32},
      {"lud", "blocked LU decomposition (one factorization)", "matrix side", lud_iteration,
       lud_footprint, 8192, kTile, 1 << 16},
      {"bfs", "breadth-first search, mean degree 6 (one traversal)", "nodes", bfs_iteration,
       bfs_footprint, 1 << 24, 2, std::int64_t{1} << 32},
      {"kmeans", "k-means step, 34 features, 5 clusters (distance + argmin)", "points",
       kmeans_iteration, kmeans_footprint, 1'000'000, 1, std::int64_t{1} << 30},
      {"backprop", "3-layer perceptron training step, 16 hidden units", "input units",
       backprop_iteration, backprop_footprint, 1 << 22, kBpHidden, std::int64_t{1} << 30},
      {"nw", "Needleman-Wunsch alignment along anti-diagonals", "sequence length", nw_iteration,
       nw_footprint, 8192, kTile, 1 << 16},
  };
}

}  // namespace

const std::vector<ScientificKernel>& rodinia_catalog() {
  static const std::vector<ScientificKernel> catalog = build_catalog();
  return catalog;
}

core::Result<ScientificKernel> find_rodinia(std::string_view name) {
  std::string key(name);
  std::ranges::transform(key, key.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string known;
  for (const auto& k : rodinia_catalog()) {
    if (k.name == key) return k;
    known += known.empty() ? k.name : ", " + k.name;
  }
  return core::failf(core::Domain::kWorkload, core::Code::kNotFound,
                     "unknown scientific kernel '{}'; known kernels: {}", name, known);
}

}  // namespace tessera::workload
