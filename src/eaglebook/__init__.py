"""eaglebook: an executable reproduction of *Linear Transformers Implicitly Discover Unified
Numerical Algorithms* (Lutz, Gangrade, Daneshmand, Saligrama; NeurIPS 2025)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
