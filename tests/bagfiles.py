"""ROS bags written by the tests themselves, with rosbags' writers: ROS 1, ROS 2 sqlite3 and MCAP."""

from pathlib import Path

import numpy as np
from rosbags.rosbag1 import Writer as Writer1
from rosbags.rosbag2 import StoragePlugin, Writer as Writer2
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

JOINT_STATE = "sensor_msgs/msg/JointState"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
DISPLAY = "moveit_msgs/msg/DisplayTrajectory"
FORMATS = ("ros1", "sqlite3", "mcap")
T0 = 1_700_000_000 * 10**9  # ns

MOVEIT = {  # moveit_msgs/DisplayTrajectory and what it needs, as moveit_msgs defines them
    "object_recognition_msgs/msg/ObjectType": "string key\nstring db\n",
    "moveit_msgs/msg/CollisionObject": (
        "std_msgs/Header header\ngeometry_msgs/Pose pose\nstring id\nobject_recognition_msgs/ObjectType type\n"
        "shape_msgs/SolidPrimitive[] primitives\ngeometry_msgs/Pose[] primitive_poses\nshape_msgs/Mesh[] meshes\n"
        "geometry_msgs/Pose[] mesh_poses\nshape_msgs/Plane[] planes\ngeometry_msgs/Pose[] plane_poses\n"
        "string[] subframe_names\ngeometry_msgs/Pose[] subframe_poses\nbyte operation\n"),
    "moveit_msgs/msg/AttachedCollisionObject": (
        "string link_name\nCollisionObject object\nstring[] touch_links\n"
        "trajectory_msgs/JointTrajectory detach_posture\nfloat64 weight\n"),
    "moveit_msgs/msg/RobotState": (
        "sensor_msgs/JointState joint_state\nsensor_msgs/MultiDOFJointState multi_dof_joint_state\n"
        "AttachedCollisionObject[] attached_collision_objects\nbool is_diff\n"),
    "moveit_msgs/msg/RobotTrajectory": (
        "trajectory_msgs/JointTrajectory joint_trajectory\n"
        "trajectory_msgs/MultiDOFJointTrajectory multi_dof_joint_trajectory\n"),
    "moveit_msgs/msg/DisplayTrajectory": "string model_id\nRobotTrajectory[] trajectory\nRobotState trajectory_start\n",
}


def typestore(fmt):
    store = get_typestore(Stores.ROS1_NOETIC if fmt == "ros1" else Stores.ROS2_HUMBLE)
    types = {}
    for name, text in MOVEIT.items():
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


def bag_path(folder, fmt, name="run"):
    """Where a bag of this format is written: run.bag, or a ROS 2 bag folder."""
    return Path(folder) / (f"{name}.bag" if fmt == "ros1" else name)


class BagWriter:
    """Write messages of several topics to one bag: add(topic, msgtype, log time ns, message)."""

    def __init__(self, path, fmt):
        self.fmt, self.store = fmt, typestore(fmt)
        if fmt == "ros1":
            self.writer = Writer1(path)
        else:
            plugin = StoragePlugin.MCAP if fmt == "mcap" else StoragePlugin.SQLITE3
            self.writer = Writer2(path, version=9, storage_plugin=plugin)
        self.writer.open()
        self.connections = {}

    def add(self, topic, msgtype, log_time, msg, callerid=None, depth=None):
        """callerid: a ROS 1 connection's publisher; depth: a ROS 2 connection's QoS history depth
        (each caller id, each depth a connection of its own)."""
        key = (topic, msgtype, callerid, depth)
        if key not in self.connections:
            more = {} if callerid is None else {"callerid": callerid}
            if depth is not None:
                from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness, QosReliability,
                                                QosTime)

                never = QosTime(0, 0)
                more["offered_qos_profiles"] = [Qos(QosHistory.KEEP_LAST, depth, QosReliability.RELIABLE,
                                                    QosDurability.VOLATILE, never, never, QosLiveliness.AUTOMATIC,
                                                    never, False)]
            self.connections[key] = self.writer.add_connection(topic, msgtype, typestore=self.store, **more)
        raw = (self.store.serialize_ros1 if self.fmt == "ros1" else self.store.serialize_cdr)(msg, msgtype)
        self.writer.write(self.connections[key], int(log_time), raw)

    def close(self):
        self.writer.close()

    def header(self, stamp_ns, frame_id=""):
        T = self.store.types
        stamp = T["builtin_interfaces/msg/Time"](sec=int(stamp_ns // 10**9), nanosec=int(stamp_ns % 10**9))
        fields = {"stamp": stamp, "frame_id": frame_id}
        if "seq" in T["std_msgs/msg/Header"].__dataclass_fields__:
            fields["seq"] = 0
        return T["std_msgs/msg/Header"](**fields)

    def joint_state(self, stamp_ns, names, position, velocity=(), effort=(), frame_id=""):
        return self.store.types[JOINT_STATE](
            header=self.header(stamp_ns, frame_id), name=list(names),
            position=np.ascontiguousarray(position, dtype=np.float64),
            velocity=np.ascontiguousarray(velocity, dtype=np.float64),
            effort=np.ascontiguousarray(effort, dtype=np.float64))

    def joint_trajectory(self, names, time, q, qd=None, qdd=None):
        T = self.store.types
        points = []
        for k, t in enumerate(time):
            ns = int(round(t * 1e9))
            points.append(T["trajectory_msgs/msg/JointTrajectoryPoint"](
                positions=np.ascontiguousarray(q[k], dtype=np.float64),
                velocities=np.ascontiguousarray(qd[k] if qd is not None else [], dtype=np.float64),
                accelerations=np.ascontiguousarray(qdd[k] if qdd is not None else [], dtype=np.float64),
                effort=np.empty(0), time_from_start=T["builtin_interfaces/msg/Duration"](
                    sec=ns // 10**9, nanosec=ns % 10**9)))
        return T[JOINT_TRAJECTORY](header=self.header(T0), joint_names=list(names), points=points)

    def display_trajectory(self, parts):
        T = self.store.types
        empty_header = self.header(0)
        robots = [T["moveit_msgs/msg/RobotTrajectory"](
            joint_trajectory=part, multi_dof_joint_trajectory=T["trajectory_msgs/msg/MultiDOFJointTrajectory"](
                header=empty_header, joint_names=[], points=[])) for part in parts]
        start = T["moveit_msgs/msg/RobotState"](
            joint_state=self.joint_state(T0, [], []), multi_dof_joint_state=T["sensor_msgs/msg/MultiDOFJointState"](
                header=empty_header, joint_names=[], transforms=[], twist=[], wrench=[]),
            attached_collision_objects=[], is_diff=False)
        return T[DISPLAY](model_id="robot", trajectory=robots, trajectory_start=start)


def write_joint_states(path, fmt, names, time, q, qd=None, effort=None, *, topic="/joint_states", order=None,
                       stamp_offset_ns=1_250_000):
    """One publisher: a JointState per sample, names in `order` (a permutation) if given."""
    writer = BagWriter(path, fmt)
    perm = np.arange(len(names)) if order is None else np.asarray(order)
    for k, t in enumerate(time):
        stamp = T0 + int(round(t * 1e9))
        writer.add(topic, JOINT_STATE, stamp + stamp_offset_ns, writer.joint_state(
            stamp, [names[i] for i in perm], q[k, perm], [] if qd is None else qd[k, perm],
            [] if effort is None else effort[k, perm]))
    writer.close()
    return path
