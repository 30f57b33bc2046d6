#include "engine/io/npy.hpp"

#include <bit>
#include <stdexcept>

namespace mpx {

static_assert(std::endian::native == std::endian::little, "the .npy writer stores the host's bytes as little-endian");

std::string npy_bytes(std::string_view descr, const std::vector<long long>& shape, std::span<const std::uint8_t> data) {
    std::string dims;  // "3," for one dimension, "3, 4" for more, as Python writes a tuple
    for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ',';
    std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
    // magic (6) + version (2) + length (2) + header + '\n', padded with spaces to a multiple of 64.
    const std::size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    if (header.size() > 65535) throw std::length_error("npy header too long");
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    out += header;
    out.append(reinterpret_cast<const char*>(data.data()), data.size());
    return out;
}

std::string npy_floats(const std::vector<long long>& shape, std::span<const float> values) {
    return npy_bytes("<f4", shape,
                     std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(values.data()), values.size_bytes()));
}

std::string npy_ints(const std::vector<long long>& shape, std::span<const std::int32_t> values) {
    return npy_bytes("<i4", shape,
                     std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(values.data()), values.size_bytes()));
}

std::string npy_bytes_u8(const std::vector<long long>& shape, std::span<const std::uint8_t> values) {
    return npy_bytes("|u1", shape, values);
}

}  // namespace mpx
