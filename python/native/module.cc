// gradsync._native: the Python bindings of the rank's link and exchange (rank_link.h,
// exchange.h) and of the pure functions the package shares with the C++ side (the epoch order,
// checksums). Errors become RuntimeError with the status's words; blocking calls release the GIL.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include "exchange.h"
#include "gradsync/ddp/epoch_order.h"
#include "rank_link.h"

namespace py = pybind11;

namespace gradsync::python {
namespace {

template <typename T>
T Value(absl::StatusOr<T> v) {
  if (!v.ok()) throw std::runtime_error(v.status().ToString());
  return *std::move(v);
}

void Check(const absl::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

float* Floats(uintptr_t address) { return reinterpret_cast<float*>(address); }

// A Python callable held by C++ threads: copied, called and destroyed under the GIL only.
class PyCallback {
 public:
  explicit PyCallback(py::function f) : f_(new py::function(std::move(f)), Release()) {}
  PyCallback(const PyCallback&) = default;
  void operator()(const absl::Status& status) const {
    py::gil_scoped_acquire gil;
    try {
      (*f_)(status.ok() ? py::none() : py::cast(status.ToString()));
    } catch (py::error_already_set& e) {
      e.restore();
      PyErr_WriteUnraisable(nullptr);
    }
  }

 private:
  struct Release {
    void operator()(py::function* f) const {
      py::gil_scoped_acquire gil;
      delete f;
    }
  };
  std::shared_ptr<py::function> f_;
};

// The samples at positions first, first + stride, ... (count of them) of the epoch's order of
// [0, n), as int64 bytes (torch.frombuffer reads them without a copy per element). A sampler asks
// for its positions a chunk at a time, so an epoch of billions of samples never lies in memory.
py::bytes OrderBytes(uint64_t epoch_seed, int64_t n, int64_t first, int64_t count, int64_t stride) {
  if (n < 0 || first < 0 || count < 0 || stride <= 0 || (count > 0 && first + (count - 1) * stride >= n)) {
    throw py::value_error("epoch_positions: positions outside the epoch");
  }
  std::vector<int64_t> samples(static_cast<size_t>(count));
  {
    py::gil_scoped_release released;
    const ddp::EpochOrder order(epoch_seed, n);
    for (int64_t k = 0; k < count; ++k) samples[static_cast<size_t>(k)] = order[first + k * stride];
  }
  return py::bytes(reinterpret_cast<const char*>(samples.data()), samples.size() * sizeof(int64_t));
}

void BindExchange(py::module_& m) {
  py::class_<Exchange, std::shared_ptr<Exchange>>(m, "Exchange")
      .def_property_readonly("rank", &Exchange::rank)
      .def_property_readonly("size", &Exchange::size)
      .def_property_readonly("backend", &Exchange::backend)
      .def(
          "all_reduce", [](Exchange& x, uintptr_t data, int64_t count) { Check(x.AllReduce(Floats(data), count)); },
          py::arg("data_ptr"), py::arg("numel"), py::call_guard<py::gil_scoped_release>(),
          "Sums numel fp32 values at data_ptr across ranks, in place.")
      .def(
          "all_reduce_async",
          [](Exchange& x, uintptr_t data, int64_t count, py::function done) {
            PyCallback callback(std::move(done));
            py::gil_scoped_release released;
            x.AllReduceAsync(Floats(data), count, callback);
          },
          py::arg("data_ptr"), py::arg("numel"), py::arg("done"),
          "As all_reduce, returning at once; done(error) is called when it finished (error None on success).")
      .def(
          "broadcast",
          [](Exchange& x, uintptr_t data, int64_t count, int root) { Check(x.Broadcast(Floats(data), count, root)); },
          py::arg("data_ptr"), py::arg("numel"), py::arg("root"), py::call_guard<py::gil_scoped_release>())
      .def(
          "barrier", [](Exchange& x) { Check(x.Barrier()); }, py::call_guard<py::gil_scoped_release>())
      .def("abort", &Exchange::Abort);
}

void BindRankLink(py::module_& m) {
  py::class_<RankLink>(m, "RankLink")
      .def_static(
          "open", [](const std::string& dir) { return Value(RankLink::Open(dir)); }, py::arg("runtime_dir"))
      .def_property_readonly("rank", &RankLink::rank)
      .def_property_readonly("world_size", &RankLink::world_size)
      .def_property_readonly("job_id", [](const RankLink& l) { return l.assignment().job_id(); })
      .def_property_readonly("generation", [](const RankLink& l) { return l.assignment().generation(); })
      .def_property_readonly("restarts", [](const RankLink& l) { return l.assignment().restarts(); })
      .def_property_readonly("sample_log_dir", [](const RankLink& l) { return l.context().sample_log_dir(); })
      .def_property_readonly("job_seed", [](const RankLink& l) { return l.assignment().spec().training().seed(); })
      .def_property_readonly("resume",
                             [](const RankLink& l) -> py::object {
                               if (!l.assignment().has_resume_from()) return py::none();
                               const v1::CheckpointManifest& m = l.assignment().resume_from();
                               py::dict parts;
                               for (const v1::CheckpointPart& p : m.parts()) parts[py::int_(p.rank())] = p.file();
                               py::dict d;
                               d["dir"] = m.dir();
                               d["step"] = m.step();
                               d["epoch"] = m.epoch();
                               d["cursor"] = m.cursor();
                               d["world_size"] = m.world_size();
                               d["initial_loss"] = m.initial_loss();
                               d["parts"] = parts;
                               return d;
                             })
      .def(
          "epoch_seed", [](RankLink& l, int epoch) { return Value(l.EpochSeed(epoch)); }, py::arg("epoch"),
          py::call_guard<py::gil_scoped_release>())
      .def("checkpoint_dir", &RankLink::CheckpointDir, py::arg("step"))
      .def(
          "report_checkpoint",
          [](RankLink& l, int64_t step, int epoch, int64_t cursor, const std::string& path, double initial_loss) {
            return Value(l.ReportCheckpoint(step, epoch, cursor, path, initial_loss));
          },
          py::arg("step"), py::arg("epoch"), py::arg("cursor"), py::arg("path"), py::arg("initial_loss"),
          py::call_guard<py::gil_scoped_release>())
      .def(
          "report_step",
          [](RankLink& l, int64_t step, int epoch, double loss, int64_t samples, int64_t tokens, double seconds,
             double lr, double grad_norm, double initial_loss) {
            Check(l.ReportStep({step, epoch, loss, samples, tokens, seconds, lr, grad_norm}, initial_loss));
          },
          py::arg("step"), py::arg("epoch"), py::arg("loss"), py::arg("samples"), py::arg("tokens"),
          py::arg("step_seconds"), py::arg("lr"), py::arg("grad_norm"), py::arg("initial_loss"))
      .def(
          "connect_exchange",
          [](RankLink& l, const std::string& name, int device, uintptr_t stream) {
            return Value(l.ConnectExchange(name, device, stream));
          },
          py::arg("name"), py::arg("device") = -1, py::arg("stream") = 0, py::call_guard<py::gil_scoped_release>());
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "gradsync's C++ client and communicators, for the gradsync Python package";
  m.def("epoch_seed", &ddp::EpochSeed, py::arg("job_seed"), py::arg("epoch"),
        "The seed of an epoch's order, as the coordinator's epoch plan gives it.");
  m.def("epoch_positions", &OrderBytes, py::arg("epoch_seed"), py::arg("n"), py::arg("first"), py::arg("count"),
        py::arg("stride"),
        "The samples at positions first, first + stride, ... (count of them) of the epoch's order of range(n), "
        "as little-endian int64 bytes.");
  BindExchange(m);
  BindRankLink(m);
}

}  // namespace gradsync::python
