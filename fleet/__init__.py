"""The fleet scan: every PyFlink program of many repositories, analysed on Spark."""
