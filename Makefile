# tpc-bench: the index of what you can do.
#   make demo    start a lab of real XRootD/GridFTP servers, run a campaign, serve the dashboard
#   make demo-wan  the demo, then the shape of the paper's Figures 7 and 8 from its API
#   make demo-cluster  the demo on a real Kubernetes cluster in the lab: helm install, a campaign
#   make reproduce  the paper's three findings beside ours and its Figures 3, 4, 5, 7, 8 (about 25 min)
#   make test    install what is needed and run the whole test suite
#   make bench   print the benchmark ratios (fidelity, webapp scale, planner, WAN emulation, clients, authentication, cluster, redirector hops, site scaling, full duplex)
#   make images  build the container images (podman; the Debian base once, cached)
#   make kubenode  build what the lab's real Kubernetes nodes run (kubelet, images; cached)
#   make lint    ruff, hadolint, helm lint

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: help demo demo-wan demo-cluster demo-down reproduce test bench lint images kubenode helm helm-values-schema chart system-deps venv postgres simcluster delayline clean

help:
	@sed -n '2,10p' Makefile | sed 's/^# *//'

system-deps:
	@scripts/install-system-deps.sh

# The virtual environment is rebuilt only when the dependency pins change.
$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==25.3
	$(PY) -m pip install -q -c constraints.txt -e '.[test,reproduce]'
	@touch $(STAMP)

venv: $(STAMP)

postgres: system-deps
	@scripts/ensure-postgres.sh

# The simulated Kubernetes control plane's binaries are built once per machine and cached.
simcluster: system-deps
	@scripts/simcluster/build.sh >/dev/null

# The lab's WAN delay program (Go, orchestrator/lab/delayline), built once per source version.
delayline: system-deps
	@scripts/delayline/build.sh >/dev/null

# The images: a Debian base made once with debootstrap, then four images (podman's layer
# cache makes an unchanged rebuild take seconds).
images: system-deps
	@images/build.sh >/dev/null

# What the lab's real Kubernetes nodes run: kubelet and kube-proxy (the control plane's Go
# module; kubectl too, for users), CoreDNS, and the pause, coredns and postgres images;
# built once, cached.
kubenode: system-deps images
	@scripts/kubenode/build.sh >/dev/null

# helm, built once from the Go module proxy and cached like the control plane.
HELM = $(or $(TPCBENCH_HELM_CACHE),/var/cache/tpc-bench/helm/bin)/helm
helm:
	@scripts/helm/build.sh >/dev/null

# The generator of the chart's values.schema.json from its commented values.yaml, built and
# cached the same way; scripts/helm-values-schema/generate.sh writes the schema with it.
helm-values-schema:
	@scripts/helm-values-schema/build.sh >/dev/null

chart: helm
	$(HELM) package charts/tpc-bench --destination build

test: system-deps venv postgres simcluster images kubenode helm helm-values-schema delayline
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/hadolint images/Dockerfile images/Dockerfile.osg images/lab/Dockerfile
	$(HELM) lint --strict --quiet charts/tpc-bench
	$(PY) -m pytest $(PYTEST_ARGS)

# The cluster demo (make demo-cluster, or DEMO_RUNTIME=kubernetes make demo) also needs the
# control plane, the images, the node agents and helm.
DEMO_CLUSTER_DEPS = simcluster images kubenode helm

demo: system-deps venv delayline $(if $(filter kubernetes,$(DEMO_RUNTIME)),$(DEMO_CLUSTER_DEPS))
	@scripts/demo.sh

demo-cluster: system-deps venv delayline $(DEMO_CLUSTER_DEPS)
	@DEMO_RUNTIME=kubernetes scripts/demo.sh

demo-wan: demo
	@scripts/demo.sh figures

demo-down:
	@scripts/demo.sh down

# The paper profile's lab, its measurements, the findings and figures (docs/reproduce.md).
reproduce: system-deps venv delayline
	@scripts/reproduce.sh

bench: system-deps venv postgres delayline
	@scripts/bench.sh

lint: venv helm
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/hadolint images/Dockerfile images/Dockerfile.osg images/lab/Dockerfile
	$(HELM) lint --strict charts/tpc-bench

clean:
	rm -rf $(VENV) build *.egg-info
