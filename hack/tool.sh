#!/usr/bin/env bash
# Usage: hack/tool.sh NAME
#
# Builds a pinned tool from source (once per version) and prints its path.
# The tools are Go modules under hack/tools/; what they build is cached outside
# the repository, in $STAGER_CACHE_DIR (default: ~/.cache/workload-stager),
# under a directory keyed by the tool's version and its module's go.sum.
#
# NAME is one of:
#   envtest        the directory of kube-apiserver, etcd and kubectl for envtest
#                  (KUBEBUILDER_ASSETS), with the kube-controller-manager and
#                  kube-scheduler of the WECs; an already set KUBEBUILDER_ASSETS wins
#   controller-gen the CRD, RBAC and deepcopy generator
#   kustomize      the manifest builder
#   golangci-lint  the linter
#   ks-controller-manager
#                  KubeStellar's controller-manager (cmd/controller-manager),
#                  for the end-to-end tests and the demo
#   ks-transport-controller
#                  KubeStellar's OCM transport controller, from the same module
#   ocm-work       Open Cluster Management's work agent (cmd/work)
#   kwok           kwok, which fakes the WECs' nodes and runs their pods
#   kcp            kcp's server (cmd/kcp), for the kcp tests and the scale run
#   prometheus     the directory of prometheus and promtool (where they cannot
#                  be built, make takes installed ones from STAGER_PROMETHEUS_DIR)
#   helm           Helm, for the chart's lint and template checks and its install
#   image-builder  the program (hack/tools/image) that writes the stager's
#                  multi-platform OCI image layout, on go-containerregistry
#   chromium       a headless-capable Chromium for the browser tests
#                  (test/framework/browser): not built but installed, as
#                  Debian's `chromium` package, with apt-get when it is missing
#                  and this is root (or CI=true with password-less sudo);
#                  otherwise it fails naming the package to install
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${STAGER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/workload-stager}
mkdir -p "$cache"

# version MODULE_DIR DEPENDENCY: the version of a dependency in a tools module.
version() {
  (cd "$root/hack/tools/$1" && go list -m -f '{{.Version}}' "$2")
}

# key MODULE_DIR: a short hash of a tools module's requirements.
key() {
  cat "$root/hack/tools/$1/go.mod" "$root/hack/tools/$1/go.sum" | sha256sum | cut -c1-10
}

# build MODULE_DIR OUT_DIR NAME=PACKAGE...: builds each package as OUT_DIR/NAME,
# all in one `go build`, so that the packages they share compile once and the
# links run in parallel.
build() {
  local mod=$1 out=$2
  shift 2
  [ -f "$out/.built-$mod" ] && return 0
  local tmp pkgs=()
  tmp=$(mktemp -d "$cache/.build.XXXXXX")
  trap 'rm -rf "$tmp"' RETURN
  for spec in "$@"; do
    pkgs+=("${spec#*=}")
  done
  echo "hack/tool.sh: building ${pkgs[*]} (hack/tools/$mod); this happens once per version" >&2
  mkdir "$tmp/out"
  if [ ${#pkgs[@]} -eq 1 ]; then
    (cd "$root/hack/tools/$mod" && go build -trimpath -ldflags=-s -o "$tmp/out/${1%%=*}" "${pkgs[0]}") >&2
  else
    (cd "$root/hack/tools/$mod" && go build -trimpath -ldflags=-s -o "$tmp/out/" "${pkgs[@]}") >&2
    for spec in "$@"; do
      local name=${spec%%=*} pkg=${spec#*=}
      [ "$name" = "${pkg##*/}" ] || mv "$tmp/out/${pkg##*/}" "$tmp/out/$name"
    done
  fi
  mkdir -p "$out"
  mv "$tmp"/out/* "$out"/
  touch "$out/.built-$mod"
}

case "${1:-}" in
  envtest)
    if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
      echo "$KUBEBUILDER_ASSETS"
      exit 0
    fi
    k8s=$(version kube k8s.io/kubernetes)
    etcd=$(version etcd go.etcd.io/etcd/server/v3)
    out="$cache/envtest/k8s-$k8s-etcd-$etcd-$(key kube)$(key etcd)"
    build kube "$out" kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kubectl=k8s.io/kubernetes/cmd/kubectl \
      kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
      kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler
    build etcd "$out" etcd=go.etcd.io/etcd/server/v3
    echo "$out"
    ;;
  controller-gen)
    out="$cache/bin/controller-gen-$(version codegen sigs.k8s.io/controller-tools)-$(key codegen)"
    build codegen "$out" controller-gen=sigs.k8s.io/controller-tools/cmd/controller-gen
    echo "$out/controller-gen"
    ;;
  kustomize)
    out="$cache/bin/kustomize-$(version codegen sigs.k8s.io/kustomize/kustomize/v5)-$(key codegen)"
    build codegen "$out" kustomize=sigs.k8s.io/kustomize/kustomize/v5
    echo "$out/kustomize"
    ;;
  golangci-lint)
    out="$cache/bin/golangci-lint-$(version lint github.com/golangci/golangci-lint/v2)-$(key lint)"
    build lint "$out" golangci-lint=github.com/golangci/golangci-lint/v2/cmd/golangci-lint
    echo "$out/golangci-lint"
    ;;
  ks-controller-manager | ks-transport-controller)
    out="$cache/bin/kubestellar-$(version kubestellar github.com/kubestellar/kubestellar)-$(key kubestellar)"
    # Checksums of kubeflex (in KubeStellar's module graph) come from go.sum
    # only, never from the public checksum database; for this build only.
    GONOSUMDB=github.com/kubestellar/kubeflex \
      build kubestellar "$out" ks-controller-manager=github.com/kubestellar/kubestellar/cmd/controller-manager \
      ks-transport-controller=github.com/kubestellar/kubestellar/pkg/transport/ocm-transport-controller
    echo "$out/$1"
    ;;
  ocm-work)
    out="$cache/bin/ocm-$(version ocm open-cluster-management.io/ocm)-$(key ocm)"
    # about-api (in OCM's module graph) is not in the public checksum
    # database: its checksum comes from go.sum, for this build only.
    GONOSUMDB=sigs.k8s.io/about-api \
      build ocm "$out" ocm-work=open-cluster-management.io/ocm/cmd/work
    echo "$out/ocm-work"
    ;;
  kwok)
    out="$cache/bin/kwok-$(version kwok sigs.k8s.io/kwok)-$(key kwok)"
    build kwok "$out" kwok=sigs.k8s.io/kwok/cmd/kwok
    echo "$out/kwok"
    ;;
  kcp)
    out="$cache/bin/kcp-$(version kcp github.com/kcp-dev/kcp)-$(key kcp)"
    # kcp's forks of Kubernetes and its other modules are not in the public
    # checksum database: their checksums come from go.sum, for this build only.
    GONOSUMDB=github.com/kcp-dev \
      build kcp "$out" kcp=github.com/kcp-dev/kcp/cmd/kcp
    echo "$out/kcp"
    ;;
  helm)
    out="$cache/bin/helm-$(version helm helm.sh/helm/v3)-$(key helm)"
    build helm "$out" helm=helm.sh/helm/v3/cmd/helm
    echo "$out/helm"
    ;;
  image-builder)
    # The module holds the program itself: its sources are part of the key.
    src=$(cat "$root"/hack/tools/image/*.go | sha256sum | cut -c1-10)
    out="$cache/bin/image-builder-$(version image github.com/google/go-containerregistry)-$(key image)-$src"
    build image "$out" image-builder=.
    echo "$out/image-builder"
    ;;
  prometheus)
    out="$cache/bin/prometheus-$(version prometheus github.com/prometheus/prometheus)-$(key prometheus)"
    # Only static scrape targets are used: the service discovery plugins
    # (cloud SDKs, most of the build) are left out.
    GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=remove_all_sd" \
      build prometheus "$out" prometheus=github.com/prometheus/prometheus/cmd/prometheus \
      promtool=github.com/prometheus/prometheus/cmd/promtool
    echo "$out"
    ;;
  chromium)
    # A browser cannot be built from a Go module: this one comes from the
    # distribution, which keeps it patched, like the apt-get of a CI image.
    if [ -n "${STAGER_CHROMIUM:-}" ]; then
      path=$STAGER_CHROMIUM
    else
      path=$(command -v chromium || true)
    fi
    if [ -z "$path" ]; then
      if [ "$(id -u)" = 0 ]; then
        sudo=()
      elif [ "${CI:-}" = true ] && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
      else
        echo "hack/tool.sh: Chromium is not installed: install Debian's chromium package (apt-get install chromium)," >&2
        echo "or set STAGER_CHROMIUM to a Chromium or Chrome binary" >&2
        exit 1
      fi
      echo "hack/tool.sh: installing Debian's chromium package with apt-get (about 125 MB); this happens once per machine" >&2
      # The lock timeout lets two makes started at once wait for each other.
      install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=600
        install --no-install-recommends chromium)
      # A fresh machine has no package lists, an old one stale ones: update
      # only when the install fails, which spares the update on later runs.
      if ! "${install[@]}" >&2; then
        "${sudo[@]}" apt-get -q -o DPkg::Lock::Timeout=600 update >&2
        "${install[@]}" >&2
      fi
      path=$(command -v chromium || true)
      [ -n "$path" ] || { echo "hack/tool.sh: apt-get installed chromium, but no chromium is on PATH" >&2; exit 1; }
    fi
    # Usable means it runs: a binary that lacks a library fails here, not in a test.
    if ! version=$("$path" --version 2>/dev/null) || [ -z "$version" ]; then
      echo "hack/tool.sh: $path does not run (\`$path --version\` failed); reinstall Debian's chromium package" >&2
      exit 1
    fi
    echo "$path"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
    exit 2
    ;;
esac
