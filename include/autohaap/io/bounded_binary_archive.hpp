// BoundedBinaryInputArchive: cereal's binary input archive for bytes that
// come from a file — a cache, a checkpoint — which a full disk, a torn copy
// or a flipped bit may have changed.
//
// Reads exactly what cereal::BinaryOutputArchive writes (same layout, this
// machine's byte order). The difference: every size that a string or a
// container announces is checked against the bytes still unread before
// anything is allocated for it. cereal's own archive resizes first, so one
// damaged length byte asks for gigabytes (an out-of-memory kill, repeated
// on every retry); here it is cereal::Exception ("a string or list of N
// elements, only M bytes left"), which the caller turns into its refusal.
//
// The bound: every element takes at least one byte in the archive, so a
// list of N elements needs N bytes; what a load allocates is at most the
// largest element's in-memory size times the input's size. Reading past the
// end, or a bool stored as a byte other than 0 or 1, is the same exception. Cost: as cereal's BinaryInputArchive. Not
// thread-safe (one archive per reader); the bytes must outlive it.
#pragma once

#include <cereal/archives/binary.hpp>
#include <cereal/cereal.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace autohaap {

class BoundedBinaryInputArchive
    : public cereal::InputArchive<BoundedBinaryInputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit BoundedBinaryInputArchive(std::string_view bytes)
      : cereal::InputArchive<BoundedBinaryInputArchive, cereal::AllowEmptyClassElision>(this), bytes_(bytes) {}

  std::size_t remaining() const { return bytes_.size() - position_; }
  std::size_t position() const { return position_; }

  void loadBinary(void* data, std::size_t size) {
    if (size > remaining())
      throw cereal::Exception("a read of " + std::to_string(size) + " bytes at byte " + std::to_string(position_) +
                              ", only " + std::to_string(remaining()) + " left");
    if (size > 0) std::memcpy(data, bytes_.data() + position_, size);
    position_ += size;
  }

  // Called with each size a string or container announces, before it is
  // allocated.
  void check_size(std::uint64_t elements) const {
    if (elements > remaining())
      throw cereal::Exception("a string or list of " + std::to_string(elements) + " elements at byte " +
                              std::to_string(position_) + ", only " + std::to_string(remaining()) + " bytes left");
  }

 private:
  std::string_view bytes_;
  std::size_t position_ = 0;
};

// The serialization functions cereal looks for, as for its binary archive.
template <class T>
inline std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>> CEREAL_LOAD_FUNCTION_NAME(
    BoundedBinaryInputArchive& ar, T& t) {
  ar.loadBinary(std::addressof(t), sizeof(t));
}

// A bool is one byte, 0 or 1: any other byte copied into one would be a
// bool of no value (undefined behaviour wherever it is read).
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, bool& t) {
  static_assert(sizeof(bool) == 1);
  unsigned char byte = 0;
  ar.loadBinary(&byte, 1);
  if (byte > 1)
    throw cereal::Exception("a bool of value " + std::to_string(byte) + " at byte " + std::to_string(ar.position() - 1));
  t = byte == 1;
}

template <class T>
inline void CEREAL_SERIALIZE_FUNCTION_NAME(BoundedBinaryInputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
inline void CEREAL_SERIALIZE_FUNCTION_NAME(BoundedBinaryInputArchive& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  ar.check_size(static_cast<std::uint64_t>(t.size));
}

template <class T>
inline void CEREAL_LOAD_FUNCTION_NAME(BoundedBinaryInputArchive& ar, cereal::BinaryData<T>& bd) {
  ar.loadBinary(bd.data, static_cast<std::size_t>(bd.size));
}

}  // namespace autohaap

// Types with load_minimal are matched against the archive that wrote them.
namespace cereal::traits::detail {
template <>
struct get_output_from_input<autohaap::BoundedBinaryInputArchive> {
  using type = cereal::BinaryOutputArchive;
};
}  // namespace cereal::traits::detail
