"""torchcomms' TorchCommBackend where torchcomms is importable (the backend's class derives from
it, as torchcomms.register_backend requires), else object: the class then works on its own."""

try:
    import torchcomms
except ImportError:
    torchcomms = None

TorchCommBackend = torchcomms.TorchCommBackend if torchcomms is not None else object
