# The Debian packages (packaging/README.md): `cmake --build build --target
# package`, or `cpack` in build/, makes three of them in build/:
#
#   rungd        the daemon, the dashboard, the schema, rungd.service
#   rung-worker  rung-worker, rung-train (and its CUDA module where nvcc
#                built it), rung-worker.service
#   rung         the command line client, the Python client, the docs
#
# Each is a CPack component; the programs' install() rules sit beside them
# (server/, worker/, cli/, kernels/ and kernels/cuda/cuda.cmake), the other
# files' here. Included at the end of the top-level CMakeLists.txt, after
# every target exists.

set(RUNG_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

# The files that tie Rung into the system: units, the system users and the
# settings in /etc. They name /usr/bin and /etc, so they only fit the
# packages (prefix /usr): EXCLUDE_FROM_ALL keeps them out of a plain `cmake
# --install` (which may go to /usr/local or a home folder) and in the
# packages, which install component by component. Debian 12 keeps units in
# /lib/systemd/system and users in /usr/lib/sysusers.d.
install(FILES ${RUNG_PACKAGING_DIR}/systemd/rungd.service
        DESTINATION /lib/systemd/system COMPONENT rungd EXCLUDE_FROM_ALL)
install(FILES ${RUNG_PACKAGING_DIR}/sysusers/rungd.conf
        DESTINATION /usr/lib/sysusers.d COMPONENT rungd EXCLUDE_FROM_ALL)
install(FILES ${RUNG_PACKAGING_DIR}/etc/rungd.conf
        DESTINATION /etc/rung COMPONENT rungd EXCLUDE_FROM_ALL)
install(FILES ${RUNG_PACKAGING_DIR}/systemd/rung-worker.service
        DESTINATION /lib/systemd/system COMPONENT rung-worker EXCLUDE_FROM_ALL)
install(FILES ${RUNG_PACKAGING_DIR}/sysusers/rung-worker.conf
        DESTINATION /usr/lib/sysusers.d COMPONENT rung-worker EXCLUDE_FROM_ALL)
install(FILES ${RUNG_PACKAGING_DIR}/etc/rung-worker.conf
        DESTINATION /etc/rung COMPONENT rung-worker EXCLUDE_FROM_ALL)

# Every package has its copyright file (Debian policy 12.5); rungd's also
# names uPlot, which it carries.
install(FILES ${RUNG_PACKAGING_DIR}/debian/rungd/copyright
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/rungd COMPONENT rungd EXCLUDE_FROM_ALL)
install(FILES ${RUNG_PACKAGING_DIR}/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/rung-worker COMPONENT rung-worker
        EXCLUDE_FROM_ALL)
install(FILES ${RUNG_PACKAGING_DIR}/debian/copyright
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/rung COMPONENT rung EXCLUDE_FROM_ALL)

# The Python client: python/rung is plain Python with nothing to build
# (python/_build.py only zips it into a wheel), so it is copied where
# Debian's python3 finds modules. That folder is Debian's own, hence
# EXCLUDE_FROM_ALL as above; `pip install ./python` remains the way
# elsewhere.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/rung
        DESTINATION lib/python3/dist-packages COMPONENT rung
        EXCLUDE_FROM_ALL FILES_MATCHING PATTERN "*.py" PATTERN "py.typed"
        PATTERN "__pycache__" EXCLUDE)

# The docs and examples, with the client: README.md, docs/ and examples/
# keep their layout, so the links between them still work.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT rung)
file(GLOB rung_docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${rung_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT rung)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT rung USE_SOURCE_PERMISSIONS PATTERN "__pycache__" EXCLUDE)

# CPack: one .deb per component, named rungd_<version>_<arch>.deb and so on.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rung)
set(CPACK_PACKAGE_VENDOR "Rung")
set(CPACK_PACKAGE_CONTACT "Rung maintainers")
set(CPACK_PACKAGE_VERSION ${RUNG_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL rungd rung-worker rung)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# Depends from the shared libraries the programs actually link
# (dpkg-shlibdeps). Libraries that no Debian package holds, such as a CUDA
# toolkit installed from NVIDIA's archive, add nothing.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Packages hold stripped programs, as Debian's do.
set(CPACK_STRIP_FILES ON)
# Maintainer scripts 0755 and conffiles 0644, whatever the checkout says.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_RUNGD_PACKAGE_NAME rungd)
set(CPACK_DEBIAN_RUNGD_DESCRIPTION
    "Rung hyperparameter tuning service: the scheduler daemon
rungd stores experiments and trials in SQLite, proposes configurations
(grid, random, Sobol, Bayesian search) and hands them to rung-worker
processes over HTTP. Also the web dashboard and rungd.service.")
set(CPACK_DEBIAN_RUNGD_PACKAGE_CONTROL_EXTRA
    ${RUNG_PACKAGING_DIR}/debian/rungd/postinst ${RUNG_PACKAGING_DIR}/debian/rungd/prerm
    ${RUNG_PACKAGING_DIR}/debian/rungd/postrm ${RUNG_PACKAGING_DIR}/debian/rungd/conffiles)

set(CPACK_DEBIAN_RUNG-WORKER_PACKAGE_NAME rung-worker)
set(CPACK_DEBIAN_RUNG-WORKER_DESCRIPTION
    "Rung hyperparameter tuning service: the worker
rung-worker pulls trials from rungd and runs them on this machine's GPUs or
CPUs; rung-train is Rung's built-in trainer. Also rung-worker.service.")
# rung-train's default data (docs/trainer.md).
set(CPACK_DEBIAN_RUNG-WORKER_PACKAGE_RECOMMENDS dataset-fashion-mnist)
set(CPACK_DEBIAN_RUNG-WORKER_PACKAGE_CONTROL_EXTRA
    ${RUNG_PACKAGING_DIR}/debian/rung-worker/postinst
    ${RUNG_PACKAGING_DIR}/debian/rung-worker/prerm
    ${RUNG_PACKAGING_DIR}/debian/rung-worker/postrm
    ${RUNG_PACKAGING_DIR}/debian/rung-worker/conffiles)

set(CPACK_DEBIAN_RUNG_PACKAGE_NAME rung)
set(CPACK_DEBIAN_RUNG_DESCRIPTION
    "Rung hyperparameter tuning service: the clients
The command line client rung, the Python module rung (import rung), and
Rung's documentation and examples.")
# The Python client needs python3; the command line client does not.
set(CPACK_DEBIAN_RUNG_PACKAGE_RECOMMENDS python3)
set(CPACK_DEBIAN_RUNG_PACKAGE_CONTROL_EXTRA ${RUNG_PACKAGING_DIR}/debian/rung/prerm)

# The version is found again when the packages are made, the way the build
# finds the programs' (common/version.c, cmake/version.cmake): a commit
# after configuring changes the programs' --version but not RUNG_VERSION,
# and the package must say what it holds (cmake/package_version.cmake).
set(CPACK_RUNG_CMAKE ${CMAKE_COMMAND})
set(CPACK_RUNG_VERSION_BASE ${PROJECT_VERSION})
set(CPACK_RUNG_SOURCE_DIR ${PROJECT_SOURCE_DIR})
set(CPACK_RUNG_VERSION_C ${CMAKE_BINARY_DIR}/common/version.c)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/package_version.cmake)

include(CPack)
