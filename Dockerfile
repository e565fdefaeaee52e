# One image for every tessera command: the scheduler extender, the node agent, the node daemon,
# the simulators and `tessera ctl`. Build it from the repository's root:
#   docker build -t tessera:0.1.0 .
#   docker build -t tessera:0.1.0 --build-arg CUDA=13-0 .    # with the interposer (below)
# (the tag deploy/ runs). Two stages on Debian 12: the first builds the program and the
# interposer with the project's own dependency script; the second holds them and the shared
# libraries they link (tests/cli/dockerfile_check.sh checks that list against the built program)
# and runs as a user without privileges. The node daemon's DaemonSet runs it as root, to own the
# host's /run/tessera.

FROM debian:12 AS build
# The real-GPU backend and the interposer (libtessera_interpose.so, which tenants preload) are
# built only with a CUDA toolkit, which Debian does not package: --build-arg CUDA=13-0 (a
# version of NVIDIA's Debian 12 repository) installs nvcc and the headers from there. Without
# it the image runs everything on the simulated GPU and the node daemon without the interposer.
ARG CUDA=
ENV CUDA_HOME=/usr/local/cuda
RUN if [ -n "$CUDA" ]; then \
      apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
      && curl -fsSLO https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb \
      && dpkg -i cuda-keyring_1.1-1_all.deb && rm cuda-keyring_1.1-1_all.deb && apt-get update \
      && apt-get install -y --no-install-recommends "cuda-nvcc-$CUDA" "cuda-cudart-dev-$CUDA" \
           "cuda-driver-dev-$CUDA" "libcublas-dev-$CUDA" \
      && ln -sfn "/usr/local/cuda-$(echo "$CUDA" | tr - .)" /usr/local/cuda; \
    fi
WORKDIR /src
COPY . .
RUN ./scripts/install-deps.sh image \
 && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=ON \
      -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF \
 && cmake --build build \
 && cmake --install build --component tessera_runtime --prefix /out/usr/local

FROM debian:12-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libabsl20220623 libcpp-httplib0.11 libfmt9 libglpk40 libgnutls30 libgrpc++1.51 libgrpc29 \
      libhwloc15 libmicrohttpd12 libnlopt0 libprotobuf32 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libpugixml1v5 libspdlog1.10 \
      libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin tessera
COPY --from=build /out/usr/local/ /usr/local/
USER 10001
ENTRYPOINT ["/usr/local/bin/tessera"]
CMD ["--help"]
