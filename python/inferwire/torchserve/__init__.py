"""TorchServe as its users run it: config.properties, the torchserve command line, token
authorization, .mar archives and handlers (inferwire torchserve)."""
