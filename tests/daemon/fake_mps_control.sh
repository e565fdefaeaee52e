#!/bin/sh
# Stands in for nvidia-cuda-mps-control in the daemon's --mps test: appends to $FAKE_MPS_LOG one
# line per run with its arguments, its pipe directory and what it read on stdin, and exits 0 as
# the real one does once it has daemonised (-d) or answered a command.
input=""
if [ "$1" != "-d" ]; then input=$(cat); fi
printf 'args=[%s] pipe=%s input=[%s]\n' "$*" "$CUDA_MPS_PIPE_DIRECTORY" "$input" >>"$FAKE_MPS_LOG"
