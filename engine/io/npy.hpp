// NumPy's .npy format (version 1.0), written: the plain binary arrays of a PyTorch export. Rule:
// little-endian, C order, the header padded to a multiple of 64 bytes as NumPy writes it, so
// numpy.load and the export's own standard-library reader read the same file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mpx {

// The whole file: header and data. `descr` is NumPy's type string ("<f4", "<i4", "|u1"), `shape`
// its dimensions; data.size() must be the product of shape × the element size.
std::string npy_bytes(std::string_view descr, const std::vector<long long>& shape, std::span<const std::uint8_t> data);
std::string npy_floats(const std::vector<long long>& shape, std::span<const float> values);
std::string npy_ints(const std::vector<long long>& shape, std::span<const std::int32_t> values);
std::string npy_bytes_u8(const std::vector<long long>& shape, std::span<const std::uint8_t> values);

}  // namespace mpx
