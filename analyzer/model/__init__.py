"""Plain data types shared by every stage: source positions, graphs, findings."""
