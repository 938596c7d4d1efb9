// RankGroup: the collectives the distributed search uses, over an MPI
// communicator or over this one process alone, so the driver is written
// once for both. Each collective serializes with Boost.MPI's packed
// archives (messages.hpp) and counts the bytes this rank sent and received.
//
// all_gather packs by hand rather than calling boost::mpi::all_gather only
// to learn the message sizes for the rank report; the wire format is the
// same. wait_for_all is a non-blocking barrier polled with short sleeps: a
// rank that ran out of work waits there without spinning on a core that its
// busy peers (and their threads) need.
//
// Call every collective from the thread that built the MPI session, on
// every rank, in the same order. Private to src/dist and its tests.
// Cost: all_gather is one MPI_Allgather of sizes plus one MPI_Allgatherv;
// broadcast and gather are the same with one root.
#pragma once

#include <mpi.h>

#include <boost/mpi/communicator.hpp>
#include <boost/mpi/packed_iarchive.hpp>
#include <boost/mpi/packed_oarchive.hpp>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "autohaap/dist/mpi_session.hpp"

namespace autohaap::dist {

class RankGroup {
 public:
  // This process alone: collectives return their own input.
  RankGroup() = default;
  explicit RankGroup(const boost::mpi::communicator& comm) : comm_(&comm) {}

  int rank() const { return comm_ ? comm_->rank() : 0; }
  int size() const { return comm_ ? comm_->size() : 1; }

  std::int64_t bytes_sent() const { return bytes_sent_; }
  std::int64_t bytes_received() const { return bytes_received_; }

  // Every rank's value, indexed by rank.
  template <class T>
  std::vector<T> all_gather(const T& mine) {
    if (!comm_) return {mine};
    boost::mpi::packed_oarchive out(*comm_);
    out << mine;
    const int n = size();
    int my_size = static_cast<int>(out.size());
    std::vector<int> sizes(n), offsets(n);
    MPI_Allgather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_Comm(*comm_));
    std::exclusive_scan(sizes.begin(), sizes.end(), offsets.begin(), 0);
    boost::mpi::packed_iarchive::buffer_type buffer(static_cast<std::size_t>(offsets.back() + sizes.back()));
    MPI_Allgatherv(const_cast<void*>(out.address()), my_size, MPI_PACKED, buffer.data(), sizes.data(),
                   offsets.data(), MPI_PACKED, MPI_Comm(*comm_));
    std::vector<T> all(n);
    for (int r = 0; r < n; ++r) {
      if (r == rank()) {
        all[r] = mine;
        continue;
      }
      boost::mpi::packed_iarchive in(*comm_, buffer, boost::archive::no_header, offsets[r]);
      in >> all[r];
      bytes_received_ += sizes[r];
    }
    bytes_sent_ += my_size;
    return all;
  }

  // `value` from `root` on every rank.
  template <class T>
  void broadcast(T& value, int root) {
    if (!comm_) return;
    boost::mpi::packed_oarchive out(*comm_);
    if (rank() == root) out << value;
    int n = static_cast<int>(out.size());
    MPI_Bcast(&n, 1, MPI_INT, root, MPI_Comm(*comm_));
    boost::mpi::packed_iarchive::buffer_type buffer(static_cast<std::size_t>(n));
    if (rank() == root) {
      std::copy_n(static_cast<const char*>(out.address()), n, buffer.data());
      bytes_sent_ += n;
    }
    MPI_Bcast(buffer.data(), n, MPI_PACKED, root, MPI_Comm(*comm_));
    if (rank() != root) {
      boost::mpi::packed_iarchive in(*comm_, buffer, boost::archive::no_header, 0);
      in >> value;
      bytes_received_ += n;
    }
  }

  // Every rank's value on `root` (indexed by rank); empty elsewhere.
  template <class T>
  std::vector<T> gather(const T& mine, int root) {
    if (!comm_) return {mine};
    boost::mpi::packed_oarchive out(*comm_);
    out << mine;
    const int n = size();
    int my_size = static_cast<int>(out.size());
    std::vector<int> sizes(n), offsets(n);
    MPI_Gather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, MPI_Comm(*comm_));
    std::exclusive_scan(sizes.begin(), sizes.end(), offsets.begin(), 0);
    const bool is_root = rank() == root;
    boost::mpi::packed_iarchive::buffer_type buffer(is_root ? static_cast<std::size_t>(offsets.back() + sizes.back())
                                                            : 0);
    MPI_Gatherv(const_cast<void*>(out.address()), my_size, MPI_PACKED, buffer.data(), sizes.data(), offsets.data(),
                MPI_PACKED, root, MPI_Comm(*comm_));
    if (!is_root) {
      bytes_sent_ += my_size;
      return {};
    }
    std::vector<T> all(n);
    for (int r = 0; r < n; ++r) {
      if (r == root) {
        all[r] = mine;
        continue;
      }
      boost::mpi::packed_iarchive in(*comm_, buffer, boost::archive::no_header, offsets[r]);
      in >> all[r];
      bytes_received_ += sizes[r];
    }
    return all;
  }

  // Whether any rank passed true: a cheap agreement (one MPI_Allreduce of
  // an int), e.g. that a rank saw a stop during initialization.
  bool any(bool mine) {
    if (!comm_) return mine;
    int in = mine ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_Comm(*comm_));
    return out != 0;
  }

  // Blocks until every rank has called it; returns the seconds waited.
  double wait_for_all();

  // See MpiSession::first_failure; for one process, try_step.
  std::optional<RankFailure> first_failure(const std::function<void()>& step);

  // Ends the job (MPI_Abort) after printing the message; for one process,
  // throws std::runtime_error instead, which the command reports.
  [[noreturn]] void abort(const std::string& message, int code);

 private:
  const boost::mpi::communicator* comm_ = nullptr;
  std::int64_t bytes_sent_ = 0;
  std::int64_t bytes_received_ = 0;
};

}  // namespace autohaap::dist
