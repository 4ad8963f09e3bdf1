#!/bin/sh
# DRAM and L2 traffic, shared-memory wavefronts and stalls of the k=3 separable filter's kernels
# (the generator's k=1 copies, the taps of one axis, the page tile) under Nsight Compute, each
# launched once (not a test):  PYTHONPATH=sw sh tests/merit/gpu/sep_profile.sh
NCU=${NCU:-$(command -v ncu)}
[ -n "$NCU" ] || { echo "Nsight Compute (ncu) is not on PATH: set NCU to its executable" >&2; exit 2; }
exec "$NCU" --clock-control none --kernel-name regex:merit_ --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_op_read_hit_rate.pct,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    python tests/merit/gpu/sep_probe.py --axes --launch "$@"
