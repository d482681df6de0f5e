"""tpc-bench's certificate authority: our osg-ca-generator, written with `cryptography`."""
