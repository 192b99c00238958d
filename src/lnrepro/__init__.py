"""Reproduce Xiong et al. 2020 (Pre-LN vs Post-LN) and Liu et al. 2020 (Admin)."""

__version__ = "0.1.0"
