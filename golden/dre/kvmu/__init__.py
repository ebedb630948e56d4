"""Golden model of the KVMU: memory map, jobs, range coalescing and burst legalisation, and the session driver."""

from vrex.golden.dre.kvmu.bursts import EVICT, PREFETCH, Burst, Coalescer, Range, legalise
from vrex.golden.dre.kvmu.jobs import Job, load_kvmu_jobs, mask_beats, random_kvmu_jobs, save_kvmu_jobs
from vrex.golden.dre.kvmu.model import CAUSES, KVMUModel, Response
from vrex.golden.dre.kvmu.session import kvmu_report, run_jobs, session_jobs

__all__ = ["EVICT", "PREFETCH", "Burst", "Coalescer", "Range", "legalise", "Job", "load_kvmu_jobs", "mask_beats",
           "random_kvmu_jobs", "save_kvmu_jobs", "CAUSES", "KVMUModel", "Response", "kvmu_report", "run_jobs",
           "session_jobs"]
