"""What tpc-bench runs on a Kubernetes cluster besides the servers: the certificate signer
(the one pod with the CA key) and the requester the server pods use to get their host
certificates through the CSR API."""
