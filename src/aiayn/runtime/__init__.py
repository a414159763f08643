"""What runs the paper's model fast on the machine at hand, kept apart from the model.

- ``hardware``: what the machine has, and the training precision chosen from it;
- ``threads``: the OpenMP spin and the cores a process may use (the command line applies
  them; importing aiayn changes nothing);
- ``cpu``: CPU inference layers swapped in at load time (``for_inference``): products by row
  count, the attention of decoding steps, the fused ReLU, int8, ``top_k``, the allocator;
- ``compiled``: decoding steps compiled ahead of time (``--compile``).

Nothing here is imported by ``aiayn.model``; this package imports the model to swap its
modules. This module itself imports nothing, so that the command line can set the thread
policy before PyTorch loads.
"""
