// The memory of the fast DRAM (merit_dram.sv) and the tile list of the TAU feeder
// (merit_sim_<tau>.sv): byte arrays in C++, loaded from and dumped to binary files in one go.
// Simulation only.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
std::vector<uint8_t> mem;      // the DRAM image, padded to whole 64-bit words
uint64_t mem_size = 0;         // bytes loaded
std::vector<uint16_t> tiles;   // tile origins, 6 coordinates each
FILE* trace = nullptr;         // the handshake trace (MERIT_DRAM_TRACE), if asked for

bool read_file(const char* path, std::vector<uint8_t>& out) {
    FILE* f = std::fopen(path, "rb");
    if (!f) return false;
    std::fseek(f, 0, SEEK_END);
    long n = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    out.assign(static_cast<size_t>(n < 0 ? 0 : n), 0);
    bool ok = n >= 0 && std::fread(out.data(), 1, out.size(), f) == out.size();
    std::fclose(f);
    return ok;
}
}  // namespace

extern "C" long long merit_dram_load(const char* path) {
    if (!read_file(path, mem)) {
        std::fprintf(stderr, "merit_dram: cannot read %s\n", path);
        mem.clear();
        mem_size = 0;
        return 0;
    }
    mem_size = mem.size();
    mem.resize((mem_size + 15) / 8 * 8, 0);
    return static_cast<long long>(mem_size);
}

// The trace of the DRAM's handshakes: one line a handshake, "cycle channel id address length",
// the channel 0-4 for AR, R, AW, W, B; AR and AW give their burst's address (hex) and AxLEN, R its
// RLAST as the length, W its strobes as the address and WLAST as the length (its ID is 0: W
// carries none). The file is the environment variable MERIT_DRAM_TRACE; none without it.
extern "C" int merit_dram_trace_open() {
    const char* path = std::getenv("MERIT_DRAM_TRACE");
    if (!path || !*path) return 0;
    trace = std::fopen(path, "w");
    if (!trace) std::fprintf(stderr, "merit_dram: cannot write %s\n", path);
    return trace != nullptr;
}

extern "C" void merit_dram_trace(long long cycle, int channel, int id, long long address,
                                 int length) {
    if (trace) std::fprintf(trace, "%lld %d %d %llx %d\n", cycle, channel, id,
                            static_cast<unsigned long long>(address), length);
}

extern "C" int merit_dram_dump(const char* path) {
    if (trace) std::fflush(trace);
    FILE* f = std::fopen(path, "wb");
    if (!f) {
        std::fprintf(stderr, "merit_dram: cannot write %s\n", path);
        return 0;
    }
    bool ok = std::fwrite(mem.data(), 1, mem_size, f) == mem_size;
    return std::fclose(f) == 0 && ok;
}

extern "C" long long merit_dram_read(long long address) {
    uint64_t word = 0;
    std::memcpy(&word, mem.data() + address, 8);    // little-endian host
    return static_cast<long long>(word);
}

extern "C" void merit_dram_write(long long address, long long data, int strobes) {
    uint8_t* p = mem.data() + address;
    for (int i = 0; i < 8; i++)
        if (strobes >> i & 1) p[i] = static_cast<uint8_t>(static_cast<uint64_t>(data) >> (8 * i));
}

extern "C" int merit_tiles_load(const char* path) {
    std::vector<uint8_t> raw;
    if (!read_file(path, raw)) {
        std::fprintf(stderr, "merit_tiles: cannot read %s\n", path);
        tiles.clear();
        return 0;
    }
    tiles.assign(raw.size() / 2, 0);
    std::memcpy(tiles.data(), raw.data(), tiles.size() * 2);
    return static_cast<int>(tiles.size() / 6);
}

extern "C" int merit_tile_coordinate(int tile, int axis) {
    size_t i = static_cast<size_t>(tile) * 6 + static_cast<size_t>(axis);
    return i < tiles.size() ? tiles[i] : 0;
}
