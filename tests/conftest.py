import matplotlib

matplotlib.use("Agg")  # this test process only; notebook kernels keep their inline backend
