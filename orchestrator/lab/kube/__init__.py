"""A real Kubernetes cluster on the lab's nodes (`tpcbench lab up --kubernetes`).

The control plane runs on this machine at the lab's host address; every lab node runs
containerd, a kubelet and kube-proxy inside its own network namespace, so host-network pods
(the chart's servers) sit behind the emulated WAN exactly as the lab's own servers do.

    binaries     where the built programs and images are; one-line errors naming the build
    control_plane  credentials and command lines of etcd, kube-apiserver, controllers, scheduler
    node_config  containerd, kubelet, kube-proxy and CNI configuration (pure text)
    node_agents  start and stop one node's agents (cgroups, mounts, shims)
    kernel_settings  the machine-wide sysctls kubelet changes, recorded and put back
    addons       cluster DNS (CoreDNS) and local volumes for claims
    images       our images imported into every node's containerd
    cluster_lab  the whole: start, status, stop
"""
