"""Queries that several passes share: the axis roles, the schedule's tile plan."""
